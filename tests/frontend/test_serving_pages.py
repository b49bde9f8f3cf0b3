"""A serving grading on the submission page and the review screen: the figures of both
sides, the rate search's points and its charts, from reports real gradings wrote
(``tests/recorded.py``: the catalog's shared-prefix task, graded with real engines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from benchwright import roles
from reviews.serving import serving_view
from submissions.models import Submission
from tasks import services
from tasks.bundle import load_bundle
from tasks.models import Task
from tests import factories, recorded
from tests.reviews.conftest import graded
from tests.reviews.test_views import claim, logged_in

pytestmark = pytest.mark.django_db

BUNDLE = Path(__file__).resolve().parents[2] / "reference_solutions" / "serve-shared-prefix"
SOLUTION = "shared-prefix-solution"
FAILED = "shared-prefix-short-context"
REFUSED = "shared-prefix-block-size"


@pytest.fixture
def task() -> Task:
    admin = factories.make_user(roles.ADMIN, roles.AUTHOR, roles.REVIEWER, username="boss")
    return services.bundle_import(bundle=load_bundle(BUNDLE), user=admin).task


@pytest.fixture
def sender():
    return factories.make_user(roles.API_CLIENT, username="sender")


def submitted(task: Task, sender, name: str) -> Submission:
    report = recorded.report(name)
    return graded(
        task,
        submitter=sender,
        grading=report,
        files=recorded.files(name),
        enter_queue=report["verdict"] == "accepted",  # only accepted ones are reviewed
    )


def page(client: Client, user, submission: Submission) -> str:
    client.force_login(user)
    response = client.get(reverse("submission-detail", args=[submission.pk]))
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, marker: str) -> str:
    start = html.index(marker)
    return html[start : html.index("</table>", start)]


def test_the_submitter_sees_both_sides_climb_and_the_charts(client, task, sender) -> None:
    report = recorded.report(SOLUTION)
    serving = report["serving"]
    html = page(client, sender, submitted(task, sender, SOLUTION))

    assert "data-verdict>accepted<" in html
    assert 'id="serving-heading"' in html and "Highest rate within the SLOs" in html
    assert f"{serving['rate_ratio']:.3f}\N{MULTIPLICATION SIGN}" in html
    figures = section(html, "data-serving-figures")
    for role in ("reference", "submission"):
        row = re.search(rf'<tr data-side="{role}">(.*?)</tr>', figures, re.S)
        assert row is not None, role
        assert f"{serving[role]['max_rate']:.2f}" in row.group(1)
    # One row per rate either side climbed, each side's share marked sustained or not.
    points = section(html, "data-serving-points")
    rates = {p["rate"] for role in ("reference", "submission") for p in serving[role]["points"]}
    assert len(re.findall(r"<tr data-rate=", points)) == len(rates)
    last = serving["reference"]["points"][-1]
    assert not last["sustained"] and "verdict-bad" in points
    # Attainment and goodput against the rate, one line per side.
    assert html.count('<svg class="serving-chart"') == 2
    assert html.count('<polyline points="') == 4
    assert "wanted</text>" in html
    # A kernel's speedup and timing mode mean nothing here: the summary leaves them out.
    assert "data-speedup" not in html and "data-timing-mode" not in html


def test_no_page_shows_the_reference_config(client, task, sender) -> None:
    html = page(client, sender, submitted(task, sender, SOLUTION))
    reference = (BUNDLE / "reference" / "engine.toml").read_text()
    assert "prefilled from scratch" in reference and "prefilled from scratch" not in html
    assert "enable_prefix_caching = true" in html  # the submitter's own file is shown
    assert "reference/engine.toml" not in html


def test_any_other_kinds_report_has_no_serving_view() -> None:
    assert serving_view(recorded.report(recorded.ACCEPTED)) is None
    assert serving_view(None) is None


def test_a_config_whose_requests_fail_shows_where_it_stopped(client, task, sender) -> None:
    report = recorded.report(FAILED)
    assert report["verdict"] == "runtime_error"
    html = page(client, sender, submitted(task, sender, FAILED))

    assert "the engine failed 100.0% of the requests" in html
    points = section(html, "data-serving-points")
    (only,) = report["serving"]["submission"]["points"]
    assert not only["sustained"] and only["attainment"] == 0
    # The reference climbed on; the submission stopped at the first rate, marked missed.
    row = re.search(rf'<tr data-rate="{only["rate"]}">(.*?)</tr>', points, re.S)
    assert row is not None and row.group(1).count("verdict-bad") == 1
    assert html.count('<svg class="serving-chart"') == 2


def test_a_refused_config_names_its_flag_and_draws_nothing(client, task, sender) -> None:
    html = page(client, sender, submitted(task, sender, REFUSED))
    assert "data-verdict>compile_error<" in html
    assert "data-config-errors" in html and "--block-size" in html
    assert "serving-chart" not in html and "No score" in html


def test_the_review_screen_shows_the_serving_figures_not_a_kernel_timing(client, task) -> None:
    submitted(task, None, SOLUTION)
    logged_in(client, factories.make_user(roles.REVIEWER, username="r1"))

    html = client.get(claim(client)).content.decode()

    assert "data-serving-figures" in html and "data-serving-points" in html
    assert html.count('<svg class="serving-chart"') == 2
    assert "No timing" not in html
