"""Reviewing in a real browser: one full review and one pairwise judgement,
driven mostly from the keyboard."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from benchwright import roles
from reviews.models import LineComment, PairwiseJudgement, Review
from tests import factories
from tests.browser.conftest import read_db
from tests.reviews.conftest import (
    MODEL,
    RUN,
    SOLUTION,
    graded,
    publish_rubric_task,
    report,
)

pytestmark = pytest.mark.browser


FASTER = SOLUTION.replace(
    "        return torch.clamp(x, min=0)  # one pass over memory",
    "        out = torch.empty_like(x)\n"
    "        torch.clamp(x, min=0, out=out)  # no temporary\n"
    "        return out",
)


@pytest.fixture
def review_world(transactional_db) -> dict[str, Any]:
    author = factories.make_user(roles.AUTHOR, username="ada")
    task = publish_rubric_task(author, slug="relu", title="ReLU without the reference op")
    reviewer = factories.make_user(roles.REVIEWER, username="rita")
    client = factories.make_user(roles.API_CLIENT, username="pipeline-bot")
    return {"task": task, "reviewer": reviewer, "client": client}


def log_in(page: Page, base: str) -> None:
    page.goto(f"{base}/login/?next=/review/")
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Reviews", exact=True)).to_be_visible()
    page.wait_for_load_state("load")  # the shortcut script has run


@pytest.fixture
def one_submission(review_world):
    # A real accepted grading (tests/recorded.py): timed, no integrity findings.
    review_world["submission"] = graded(
        review_world["task"], submitter=review_world["client"], grading=report()
    )
    return review_world


def test_a_reviewer_reviews_a_submission_from_the_keyboard(
    live_server, one_submission, page: Page, screenshots: Path
):
    log_in(page, live_server.url)
    page.screenshot(path=screenshots / "review-dashboard.png", full_page=True)

    page.keyboard.press("n")  # the next item

    expect(page).to_have_url(re.compile(r"/review/items/\d+/$"))
    expect(page.locator("#shortcut-help")).to_contain_text("Ctrl")
    expect(page.locator(".timing-chart")).to_be_visible()
    expect(page.locator(".code-lines .kn").first).to_have_text("import")  # highlighted
    body = page.locator("body").inner_text()
    assert MODEL not in body and RUN not in body and "pipeline-bot" not in body
    page.screenshot(path=screenshots / "review-item.png", full_page=True)

    page.get_by_role("button", name="Comment on line 9 of solution.py").click()
    page.get_by_label("Comment on solution.py, line 9").fill("clamp reads x once: good")
    page.locator("body").click(position={"x": 5, "y": 5})  # leave the text box
    page.keyboard.press("j")  # the first human criterion
    page.keyboard.press("2")  # clarity: its second level (1 point); moves on
    page.keyboard.press("4")  # numerical care: its fourth level (3 points)
    overturn = page.locator("fieldset[data-criterion=correct]")
    overturn.get_by_label("Overturn").check()
    overturn.get_by_label("Why").fill("passes only because the shapes are multiples of 8")
    page.get_by_placeholder("What works").fill("Correct and simple; the comment explains why.")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("a")  # accept
    expect(page.locator('input[data-decision="accept"]')).to_be_checked()
    page.screenshot(path=screenshots / "review-filled.png", full_page=True)
    page.keyboard.press("Control+Enter")

    expect(page.locator("[data-state=submitted]")).to_be_visible()
    page.screenshot(path=screenshots / "review-submitted.png", full_page=True)
    review = read_db(Review.objects.get)
    assert review.decision == "accept"
    assert review.score == pytest.approx(0.4)  # (0 overturned "correct" + 0 + 1 + 3) / 10
    comment = read_db(LineComment.objects.get)
    assert (comment.path, comment.line, comment.body) == (
        "solution.py",
        9,
        "clamp reads x once: good",
    )

    page.get_by_role("link", name="Reviews", exact=True).first.click()
    expect(page.locator('[data-stat="total"]')).to_have_text("1")
    expect(page.locator(".bar-chart rect")).to_have_count(14)
    page.screenshot(path=screenshots / "review-dashboard-after.png", full_page=True)


@pytest.fixture
def two_submissions(review_world):
    task = review_world["task"]
    graded(task, submitter=review_world["client"], model="model-one", run_id="r-1")
    graded(
        task,
        submitter=review_world["client"],
        model="model-two",
        run_id="r-2",
        files={"solution.py": FASTER},
    )
    return review_world


def test_a_reviewer_judges_a_pair_side_by_side(
    live_server, two_submissions, page: Page, screenshots: Path
):
    log_in(page, live_server.url)

    page.keyboard.press("p")  # pairwise review

    expect(page).to_have_url(re.compile(r"/review/pairs/[0-9a-f-]{36}/$"))
    expect(page.locator("[data-side=a] .code-lines")).to_be_visible()
    expect(page.locator("[data-side=b] .code-lines")).to_be_visible()
    expect(page.locator(".diff .diff-add").first).to_be_visible()  # A -> B differs
    body = page.locator("body").inner_text()
    assert "model-one" not in body and "model-two" not in body
    page.keyboard.press("1")  # overall: A; moves on
    page.keyboard.press("3")  # clarity: tie
    page.keyboard.press("2")  # numerical care: B
    page.get_by_label("Why").fill("A is shorter; B avoids a temporary.")
    page.screenshot(path=screenshots / "pairwise.png", full_page=True)
    page.keyboard.press("Control+Enter")

    expect(page.get_by_text("No pair to judge")).to_be_visible()
    judgement = read_db(PairwiseJudgement.objects.get)
    assert judgement.winner == "a"
    assert judgement.criterion_winners == {"clarity": "tie", "numerical-care": "b"}
    assert judgement.reason == "A is shorter; B avoids a temporary."
