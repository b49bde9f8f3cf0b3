"""The seam between the platform and its graders holds: a task kind defined only in
the tests (``text_answer.py``, a text answer graded against a hidden key) goes the
whole way with no change outside its own files.

Its bundle (``bundles/capital-of-france``) is imported, validated by the real
Celery worker (which registers the kind from ``BENCHWRIGHT_TASK_KINDS``, as a
deployment would), published, submitted to over the REST API, graded by the
worker, scored by its own automatic rubric rule, reviewed blind and exported.
Nothing here reaches into the kind's report by hand: every reading goes through
the platform's own pages, API and export.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from accounts import services as account_services
from benchwright import roles
from reviews import services as review_services
from reviews.models import ReviewOutcome
from rubrics.models import CriterionScore
from submissions.models import GradingRun, Submission
from tasks import services as task_services
from tasks.bundle import load_bundle
from tasks.models import Task, TaskStatus, ValidationRun, ValidationStatus
from tests import factories
from tests.api.conftest import bearer
from tests.exports.conftest import all_rows, build, define, exporter, snapshot_folder
from tests.journey.api import graded, submit, wait

# Gradings through the real worker, on a host the other test process keeps busy.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]

BUNDLE = Path(__file__).resolve().parent / "bundles" / "capital-of-france"
KEY = "Paris"


def answer(client: Any, text: str) -> int:
    return submit(client, "capital-of-france", {"answer.txt": text}, run_id="quiz-1")


def test_a_kind_defined_only_in_the_tests_goes_the_whole_way(
    celery_worker_process, text_answer, tmp_path, settings, monkeypatch
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    author = factories.make_user(roles.AUTHOR, username="quizmaster")
    reviewer = factories.make_user(roles.REVIEWER, username="rex")
    pipeline = factories.make_user(roles.API_CLIENT, username="pipeline")
    _, token = account_services.token_create(user=pipeline, name="ci", scopes=["read", "submit"])
    client = bearer(token)

    # manage.py grade takes the kind from the bundle, with no database, and
    # validate_tasks grades its answers in worker processes that register the kind
    # from the environment, as a deployment's do.
    out = io.StringIO()
    call_command("grade", str(BUNDLE), str(BUNDLE / "answer.txt"), "--json", stdout=out)
    assert json.loads(out.getvalue())["verdict"] == "accepted"
    monkeypatch.setenv("BENCHWRIGHT_TASK_KINDS", "text-answer=tests.graders.text_answer:TextAnswer")
    out = io.StringIO()
    call_command("validate_tasks", str(BUNDLE), stdout=out)
    assert "all 1 bundle(s) valid" in out.getvalue()
    assert "answer.txt: wrong_answer    ok" in out.getvalue()  # the negative, by base name

    # Import as a draft and validate on the real worker: the expert answer is
    # accepted, the negative gets the verdict it names.
    task_services.bundle_import(bundle=load_bundle(BUNDLE), user=author, publish=False)
    task = Task.objects.get(slug="capital-of-france")
    assert (task.kind, task.grading) == ("text-answer", {"key": "key.txt"})
    run = task_services.task_validate(task=task, user=author)
    finished = (ValidationStatus.PASSED, ValidationStatus.FAILED)
    run = wait(
        lambda: (r := ValidationRun.objects.get(pk=run.pk)).status in finished and r, "validation"
    )
    verdicts = {r.path: r.verdict for r in run.results.all()}
    assert run.status == ValidationStatus.PASSED, verdicts
    assert verdicts == {"answer.txt": "accepted", "bad/answer.txt": "wrong_answer"}

    task_services.task_submit_for_review(task=task, user=author)
    task_services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    assert task.status == TaskStatus.PUBLISHED

    # The catalog names the kind; the task's hidden files never reach an API client.
    detail = client.get("/api/v1/tasks/capital-of-france/").json()
    assert detail["kind"] == "text-answer"
    assert "key.txt" not in json.dumps(detail) and KEY not in json.dumps(detail)

    # Submissions over the API, graded by the worker through the registry.
    right, wrong = answer(client, "Paris\n"), answer(client, "Lyon\n")
    right_body, wrong_body = graded(client, right), graded(client, wrong)
    assert right_body["verdict"] == "accepted" and wrong_body["verdict"] == "wrong_answer"
    assert right_body["grading"]["metrics"] == {"matched": 1.0}
    assert wrong_body["grading"]["metrics"] == {"matched": 0.0}
    shown = json.dumps(wrong_body)
    assert KEY not in shown and "operator_notes" not in shown, "the key stays hidden"
    stored = GradingRun.objects.get(submission_id=wrong)
    assert KEY in stored.report["operator_notes"]  # kept for operators only

    # The submission page lists the kind's figures by name.
    browser = Client()
    browser.force_login(pipeline)
    page = browser.get(f"/submissions/{right}/").content.decode()
    figure_row = r'<tr data-metric="matched"><td><code>matched</code></td><td class="num">1'
    assert re.search(figure_row, page), "the figure by its name"
    assert KEY not in browser.get(f"/submissions/{wrong}/").content.decode()

    # The kind scores its own automatic rule.
    def met(body: dict[str, Any]) -> dict[str, bool | None]:
        return {c["key"]: c["met"] for c in body["rubric"]["criteria"] if c["kind"] == "automatic"}

    assert met(right_body) == {"correct": True, "matched": True}
    assert met(wrong_body) == {"correct": False, "matched": False}
    assert CriterionScore.objects.filter(submission_id=right, met=True).count() == 2

    # Blind review: only the accepted answer is queued.
    slot = review_services.assignment_claim_next(reviewer=reviewer)
    assert slot is not None and slot.submission_id == right
    review_services.review_submit(
        assignment_id=slot.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Right, and spelled as the French do.",
            scores={"spelling": review_services.ScoreInput(level=2)},
        ),
    )
    assert review_services.assignment_claim_next(reviewer=reviewer) is None
    assert ReviewOutcome.objects.get(submission_id=right).decision == "accepted"

    # The export row: the accepted, reviewed answer with the kind's metrics by name.
    owner = exporter("erin")
    definition = define(owner, slug="quiz-sft", filters={"tasks": ["capital-of-france"]})
    snapshot = build(definition, owner)
    rows = all_rows(snapshot)
    assert [(row["submission_id"], row["kind"]) for row in rows] == [(right, "text-answer")]
    (row,) = rows
    assert json.loads(row["metrics"]) == {"matched": 1.0}
    assert row["review_decision"] == "accepted" and row["verdict"] == "accepted"
    card = (snapshot_folder(snapshot) / "README.md").read_text()
    assert "| text-answer | `matched` | count | higher |" in card
    assert Submission.objects.get(pk=right).task_version.kind == "text-answer"
