"""A serving grading in a real browser: the submitter's page and a reviewer's screen
draw both sides' figures and the rate search's charts from a real grading's report
(``tests/recorded.py``: the catalog's shared-prefix task, real vLLM engines). A
screenshot goes to artifacts/screenshots/serving-submission.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from benchwright import roles
from tests import factories, recorded
from tests.browser.test_authoring import log_in
from tests.reviews.conftest import graded

pytestmark = pytest.mark.browser

SOLUTION = "shared-prefix-solution"


@pytest.fixture
def serving_submission(people: tuple[Any, Any]) -> int:
    from tests.api.conftest import publish_catalog_task

    task = publish_catalog_task("serve-shared-prefix")
    sender = factories.make_user(roles.API_CLIENT, username="pipeline-bot")
    submission = graded(
        task, submitter=sender, grading=recorded.report(SOLUTION), files=recorded.files(SOLUTION)
    )
    return submission.pk


def charts_are_drawn(page: Page) -> None:
    charts = page.locator("svg.serving-chart")
    expect(charts).to_have_count(2)
    for index in range(2):
        box = charts.nth(index).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 80, box
        # Two lines (reference, submission), each with a dot per rate it was measured at.
        expect(charts.nth(index).locator("polyline")).to_have_count(2)
    serving = recorded.report(SOLUTION)["serving"]
    dots = sum(len(serving[role]["points"]) for role in ("reference", "submission"))
    expect(charts.first.locator("circle")).to_have_count(dots)


def test_the_submitter_and_a_reviewer_read_a_serving_grading(
    live_server, serving_submission: int, page: Page, screenshots: Path
) -> None:
    base = live_server.url
    log_in(page, base, "pipeline-bot")
    page.goto(f"{base}/submissions/{serving_submission}/")
    expect(page.get_by_role("heading", name="Serving")).to_be_visible()
    expect(page.locator("[data-serving-figures] tbody tr[data-side]")).to_have_count(2)
    expect(page.locator("[data-serving-score]")).to_contain_text("the reference's")
    charts_are_drawn(page)
    page.screenshot(path=screenshots / "serving-submission.png", full_page=True)

    # The reviewer's screen, claimed from the queue, shows the same figures.
    page.get_by_role("button", name="Log out").click()
    log_in(page, base, "rex")
    page.goto(f"{base}/review/")
    page.get_by_role("button", name="Review the next item").click()
    expect(page.get_by_role("heading", name="Serving")).to_be_visible()
    charts_are_drawn(page)
