"""A debugging task goes the whole way on real data: the catalog's softmax task is
imported, validated by the real Celery worker (the expert fix, every negative and
the unchanged source), published, shown over the REST API without a hidden test,
fixed over the API with a diff and with a whole replacement file, graded by the
worker in the sandbox, reviewed blind and exported in every format. Every reading
goes through the platform's own API, pages and export."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts import services as account_services
from benchwright import roles
from reviews import services as review_services
from reviews.models import ReviewOutcome
from submissions.models import GradingRun
from tasks import services as task_services
from tasks.bundle import load_bundle
from tasks.models import Task, TaskStatus, ValidationRun, ValidationStatus
from tests import factories
from tests.api.conftest import bearer
from tests.exports.conftest import all_rows, build, define, exporter
from tests.journey.api import graded, submit, wait

from .conftest import SOFTMAX

# Gradings through the real worker, on a host the other test process keeps busy.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]

HONEST = Path(__file__).resolve().parents[2] / "exports" / "corpus" / "honest" / SOFTMAX.name
HIDDEN = ("test_softmax_hidden", "test_huge_logits", "test_float16_logits")


def fix(client: Any, path: str, content: str) -> int:
    return submit(client, SOFTMAX.name, {path: content}, run_id="debug-1")


def test_a_debugging_task_goes_the_whole_way(celery_worker_process, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    author = factories.make_user(roles.AUTHOR, username="debug-author")
    reviewer = factories.make_user(roles.REVIEWER, username="debug-reviewer")
    pipeline = factories.make_user(roles.API_CLIENT, username="debug-pipeline")
    _, token = account_services.token_create(user=pipeline, name="ci", scopes=["read", "submit"])
    client = bearer(token)

    # Validation on the real worker grades what the kind names: the expert fix
    # (three times), every negative, and the unchanged source, which must show the bug.
    task_services.bundle_import(bundle=load_bundle(SOFTMAX), user=author, publish=False)
    task = Task.objects.get(slug=SOFTMAX.name)
    run = task_services.task_validate(task=task, user=author)
    finished = (ValidationStatus.PASSED, ValidationStatus.FAILED)
    run = wait(
        lambda: (r := ValidationRun.objects.get(pk=run.pk)).status in finished and r,
        "validation",
        timeout=900,
    )
    verdicts = {r.path: r.verdict for r in run.results.all()}
    assert run.status == ValidationStatus.PASSED, verdicts
    assert verdicts == {
        "fix.diff": "accepted",
        "bad/clamp.diff": "wrong_answer",
        "bad/nan_to_num.diff": "wrong_answer",
        "bad/special_case_repro.diff": "wrong_answer",
        "bad/exit_at_import.diff": "integrity_violation",
        "bad/conftest.diff": "integrity_violation",
        "(unchanged source)": "wrong_answer",
    }
    task_services.task_submit_for_review(task=task, user=author)
    task_services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    assert task.status == TaskStatus.PUBLISHED

    detail = client.get(f"/api/v1/tasks/{SOFTMAX.name}/")
    assert detail.json()["kind"] == "debugging"
    assert not [name for name in (*HIDDEN, "fix.diff") if name in detail.content.decode()]

    # Fixes as a model sends them: a diff written its own way, and a whole file.
    diff = fix(client, "fix.diff", (HONEST / "logsumexp.diff").read_text())
    source = (SOFTMAX / "repo" / "softmax.py").read_text()
    clamped = source.replace(
        "weights = torch.exp(logits)", "weights = torch.exp(logits.clamp(max=80.0))"
    )
    assert clamped != source
    whole_file = fix(client, "softmax.py", clamped)
    right, wrong = graded(client, diff, timeout=900), graded(client, whole_file, timeout=900)
    assert right["verdict"] == "accepted", right["grading"]
    assert wrong["verdict"] == "wrong_answer", wrong["grading"]
    assert right["grading"]["metrics"]["resolved"] == 1.0
    assert right["grading"]["metrics"]["fail_to_pass_passed"] == 5.0
    assert wrong["grading"]["metrics"]["resolved"] == 0.0
    for body in (right, wrong):
        shown = json.dumps(body)
        assert not [name for name in HIDDEN if name in shown], "a hidden test reached the API"
        assert "operator_notes" not in shown
    # The operator's report keeps every test by name.
    stored = GradingRun.objects.get(submission_id=whole_file)
    assert any("test_softmax_hidden" in t["id"] for t in stored.report["tests"])

    # The solver's page shows the kind's figures and no hidden test.
    browser = Client()
    browser.force_login(pipeline)
    page = browser.get(f"/submissions/{diff}/").content.decode()
    assert re.search(r'<tr data-metric="fail_to_pass_passed">.*?<td class="num">5', page, re.S)
    assert not [name for name in HIDDEN if name in page]

    # Blind review of the accepted fix: the page renders the real report.
    slot = review_services.assignment_claim_next(reviewer=reviewer)
    assert slot is not None and slot.submission_id == diff
    reviewing = Client()
    reviewing.force_login(reviewer)
    item = reviewing.get(reverse("reviews-item", args=[slot.pk]))
    assert item.status_code == 200
    review_page = item.content.decode()
    # The fix as applied, against the buggy source, and every test by name with its
    # outcome (reviewers may see hidden tests).
    assert "against the source" in review_page
    assert re.search(r'class="diff-add">.*?logsumexp', review_page, re.S)
    assert re.search(r'class="diff-del">.*?torch\.exp\(logits\)', review_page, re.S)
    tested = re.findall(r'data-test="([^"]+)"', review_page)
    assert len(tested) == 9 and "tests/test_softmax_hidden.py::test_huge_logits" in tested
    review_services.review_submit(
        assignment_id=slot.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Normalises in log space in float32; names why exp overflowed.",
            scores={"root-cause": review_services.ScoreInput(level=2)},
        ),
    )
    assert ReviewOutcome.objects.get(submission_id=diff).decision == "accepted"

    # The export row: the reviewed fix with the kind's metrics; no hidden test in it.
    owner = exporter("debug-exporter")
    snapshot = build(define(owner, slug="debug-sft", filters={"tasks": [SOFTMAX.name]}), owner)
    (row,) = all_rows(snapshot)
    assert (row["submission_id"], row["kind"], row["verdict"]) == (diff, "debugging", "accepted")
    assert (
        json.loads(row["metrics"])["lines_changed"] == right["grading"]["metrics"]["lines_changed"]
    )
    assert not [name for name in HIDDEN if name in json.dumps(row)]

    # A second accepted fix, which the reviewer scores lower: the two make a
    # preference pair, and both reviews are critique rows. The fix is the completion.
    other = fix(client, "fix.diff", (HONEST / "max_subtracted.diff").read_text())
    assert graded(client, other, timeout=900)["verdict"] == "accepted"
    slot = review_services.assignment_claim_next(reviewer=reviewer)
    assert slot is not None and slot.submission_id == other
    review_services.review_submit(
        assignment_id=slot.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Right, but says nothing of why exp overflowed.",
            scores={"root-cause": review_services.ScoreInput(level=0)},
        ),
    )
    only_this = {"tasks": [SOFTMAX.name]}
    preference = build(
        define(owner, slug="debug-pref", format="preference", margin=0.1, filters=only_this),
        owner,
    )
    (pair,) = all_rows(preference)
    assert (pair["chosen_submission_id"], pair["rejected_submission_id"]) == (diff, other)
    assert pair["source"] == "score_margin" and pair["margin"] > 0.1
    assert "logsumexp" in pair["chosen"][0]["content"]
    assert "row_max" in pair["rejected"][0]["content"]
    critique = build(
        define(owner, slug="debug-critique", format="critique", filters=only_this), owner
    )
    rows = {row["submission_id"]: row for row in all_rows(critique)}
    assert set(rows) == {diff, other}
    assert rows[other]["reviews"][0]["feedback"].startswith("Right, but")
    assert "+++ b/softmax.py" in rows[other]["completion"][0]["content"]
    rl = build(define(owner, slug="debug-rl", format="rl", filters=only_this), owner)
    (task_row,) = all_rows(rl)
    assert json.loads(task_row["grading"])["fail_to_pass"]["total"] == 5
    for snapshot in (preference, critique, rl):
        shown = json.dumps(all_rows(snapshot), default=str)
        assert not [name for name in (*HIDDEN, "bad/") if name in shown], snapshot.pk
