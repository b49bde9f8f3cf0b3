"""A serving task the whole way, with real vLLM engines: a catalog task on a short
ladder of rates, loaded and published as ``make run`` loads the catalog, fetched over
the API (the statement only: no reference config, no expert config), submitted as
configs are by a pipeline, graded by the real Celery worker with both engines in the
sandbox, shown on the
submission page (both sides' figures, the rates climbed and their charts; the
reference's flags nowhere), reviewed, and exported with the config as the completion.

One grading measures the whole host, so the task is cut to the least that still
decides: the catalog's shared-prefix traffic climbing two rates, 4 and 20 requests a
second (on quiet hosts the reference's engine sustains about 9 to 13, prefix caching
about 30: the second rate sits between them with room either side, so the two
brackets fall apart; at 12, a faster host's reference sustained it too). The task's
validation (its expert config against the reference) is the
catalog test's (tests/graders/serving/test_catalog_tasks.py); the worker's validation
jobs are the profiling journey's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from accounts import services as account_services
from benchwright import roles
from reviews import services as review_services
from reviews.models import ReviewOutcome
from submissions.models import GradingRun
from tasks import services as task_services
from tasks.bundle import load_bundle
from tasks.models import Task, TaskStatus
from tests import factories
from tests.api.conftest import bearer
from tests.exports.conftest import all_rows, build, define, exporter
from tests.journey.api import graded, submit

# A real engine under load measures the whole host: this runs alone (see scripts/test.sh).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.serial]

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "reference_solutions" / "serve-shared-prefix"
# A config written from the statement alone, as a solver writes one (the bundle's
# hidden expert config, sent as it is, would be withheld from exports as a quote).
HONEST = ROOT / "tests" / "exports" / "corpus" / "honest" / "serve-shared-prefix"
SLUG = "serve-shared-prefix"
LADDER = [4, 20]
GRADING_S = 900  # two engines, warm-up, up to twelve runs; minutes on a busy 2-core host


def journey_bundle(folder: Path) -> Path:
    """The catalog task on a ladder of two rates."""
    shutil.copytree(CATALOG, folder)
    manifest = (folder / "task.toml").read_text()
    ladder = "rates = [4, 6, 8, 12, 16, 24, 32]"
    assert manifest.count(ladder) == 1
    (folder / "task.toml").write_text(manifest.replace(ladder, f"rates = {LADDER}"))
    return folder


def config(client: Any, text: str, run_id: str) -> int:
    return submit(client, SLUG, {"engine.toml": text}, run_id=run_id)


def test_a_serving_task_goes_the_whole_way(celery_worker_process, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    admin = factories.make_user(roles.ADMIN, roles.AUTHOR, roles.REVIEWER, username="boss")
    reviewer = factories.make_user(roles.REVIEWER, username="rex")
    pipeline = factories.make_user(roles.API_CLIENT, username="pipeline")
    _, token = account_services.token_create(user=pipeline, name="ci", scopes=["read", "submit"])
    client = bearer(token)
    bundle = journey_bundle(tmp_path / "bundle")
    reference = (bundle / "reference" / "engine.toml").read_text()
    honest = (HONEST / "cache_the_system_prompts.toml").read_text()
    refused = (bundle / "bad" / "block-size.toml").read_text()

    task_services.bundle_import(bundle=load_bundle(bundle), user=admin)
    assert Task.objects.get(slug=SLUG).status == TaskStatus.PUBLISHED

    # What an API client is shown: the statement, the workload and SLOs it is graded
    # on; never the reference config, the expert's or the negatives.
    detail = client.get(f"/api/v1/tasks/{SLUG}/").json()
    assert {f["path"] for f in detail["files"]} == {"statement.md"}
    text = json.dumps(detail)
    for secret in ("reference/engine.toml", "prefilled from scratch", "solution/engine.toml"):
        assert secret not in text, secret

    # Two configs over the API, each graded by the worker with real engines.
    right, wrong = config(client, honest, "serving-1"), config(client, refused, "serving-2")
    right_body = graded(client, right, timeout=GRADING_S)
    wrong_body = graded(client, wrong, timeout=120)  # one worker: after the first
    assert wrong_body["verdict"] == "compile_error", wrong_body
    assert "--block-size" in json.dumps(wrong_body["grading"]), "the refused flag is named"
    assert right_body["verdict"] == "accepted", right_body
    metrics = right_body["grading"]["metrics"]
    assert metrics["rate_ratio"] > 1.5 and metrics["max_rate"] >= LADDER[-1], metrics
    public = json.dumps(right_body)
    # The submitter's own flags come back; the reference's (prefix caching off) do not.
    assert '"enable_prefix_caching": true' in public
    assert "prefilled from scratch" not in public
    assert '"enable_prefix_caching": false' not in public
    report = GradingRun.objects.get(submission_id=right).report
    serving = report["serving"]
    assert serving["objective"] == "max_rate" and serving["significant"] is True
    assert serving["reference"]["engine"]["enable_prefix_caching"] is False
    reference_points, points = serving["reference"]["points"], serving["submission"]["points"]
    assert [p["sustained"] for p in reference_points] == [True, False], reference_points
    assert [p["rate"] for p in points if p["sustained"]] == LADDER, points
    # Three runs a rate and side, each as long in arrival time as the workload's own
    # (four seconds of arrivals): 16 requests at 4/s, 80 at 20/s.
    for side in ("reference", "submission"):
        runs = serving[side]["runs"]
        assert len(runs) == 6, side
        completed = {(r["rate"], r["figures"]["completed"]) for r in runs}
        assert completed == {(rate, 4 * rate) for rate in LADDER}

    # The submission page: the score, both sides' medians and a chart of each run's
    # goodput; the submitter's own config, the reference's nowhere.
    browser = Client()
    browser.force_login(pipeline)
    page = browser.get(f"/submissions/{right}/").content.decode()
    assert "data-verdict>accepted<" in page and "Highest rate within the SLOs" in page
    assert f"{serving['rate_ratio']:.3f}\N{MULTIPLICATION SIGN}" in page
    for side in ("reference", "submission"):
        assert f'<tr data-side="{side}">' in page, side
    assert page.count("<tr data-rate=") == 2 and page.count('<svg class="serving-chart"') == 2
    assert "enable_prefix_caching = true" in page  # the submitter's own file
    assert "prefilled from scratch" not in page and "data-speedup" not in page

    # Review: the reviewer sees the figures and the config, and accepts.
    slot = review_services.assignment_claim_next(reviewer=reviewer)
    assert slot is not None and slot.submission_id == right
    reviewing = Client()
    reviewing.force_login(reviewer)
    page = reviewing.get(f"/review/items/{slot.pk}/").content.decode()
    assert "data-serving-figures" in page and "data-serving-points" in page
    assert "enable_prefix_caching" in page and "prefilled from scratch" not in page
    review_services.review_submit(
        assignment_id=slot.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Prefix caching on, and the comment says what it saves.",
            scores={"why": review_services.ScoreInput(level=2)},
        ),
    )
    assert ReviewOutcome.objects.get(submission_id=right).decision == "accepted"

    # The export: the accepted config as the completion; the prompt without the
    # reference's flags.
    owner = exporter("erin")
    definition = define(owner, slug="serving-sft", filters={"tasks": [SLUG]})
    rows = all_rows(build(definition, owner))
    assert [row["submission_id"] for row in rows] == [right], "the honest config is kept"
    (row,) = rows
    prompt, completion = (m["content"] for m in row["messages"])
    assert "enable_prefix_caching = true" in completion
    assert "prefilled from scratch" not in prompt and reference.strip() not in prompt
    assert row["kind"] == "serving" and json.loads(row["metrics"])["rate_ratio"] > 1.5
