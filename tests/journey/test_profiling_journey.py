"""A profiling task the whole way, on a catalog task and answers written as a solver
writes them: imported, validated by the real Celery worker (the key script in the
sandbox), published, fetched over the API (the gzip trace byte for byte, nothing
hidden), answered over the REST API, graded by the worker, shown on the
submission page (no key) and the review page (the key beside each field, the
explanation for the human criterion), reviewed blind and exported with the answer
as the completion and no key in the prompt.
"""

from __future__ import annotations

import base64
import html
import json
import re
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
from tasks.models import Task, TaskStatus, ValidationRun, ValidationStatus
from tests import factories
from tests.api.conftest import bearer
from tests.exports.conftest import all_rows, build, define, exporter
from tests.journey.api import graded, submit, wait

# Gradings through the real worker, on a host the other test process keeps busy.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]

BUNDLE = Path(__file__).resolve().parents[2] / "reference_solutions" / "prof-host-sync"
SLUG = "prof-host-sync"


def answer(client: Any, text: str) -> int:
    return submit(client, SLUG, {"answer.json": text}, run_id="profiling-1")


def test_a_profiling_task_goes_the_whole_way(celery_worker_process, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    author = factories.make_user(roles.AUTHOR, username="tracer")
    reviewer = factories.make_user(roles.REVIEWER, username="rex")
    pipeline = factories.make_user(roles.API_CLIENT, username="pipeline")
    _, token = account_services.token_create(user=pipeline, name="ci", scopes=["read", "submit"])
    client = bearer(token)
    key = json.loads((BUNDLE / "key.json").read_text())
    expert = (BUNDLE / "expert.json").read_text()
    distractor = (BUNDLE / "bad" / "distractor.json").read_text()

    # Import as a draft and validate on the real worker: the expert answer, both
    # negatives at the partial scores they declare, and the key script.
    task_services.bundle_import(bundle=load_bundle(BUNDLE), user=author, publish=False)
    task = Task.objects.get(slug=SLUG)
    run = task_services.task_validate(task=task, user=author)
    finished = (ValidationStatus.PASSED, ValidationStatus.FAILED)
    run = wait(
        lambda: (r := ValidationRun.objects.get(pk=run.pk)).status in finished and r, "validation"
    )
    verdicts = {r.path: r.verdict for r in run.results.all()}
    assert run.status == ValidationStatus.PASSED, verdicts
    assert verdicts == {
        "expert.json": "accepted",
        "bad/distractor.json": "wrong_answer",
        "bad/lazy.json": "wrong_answer",
        "(key script)": "accepted",
    }
    task_services.task_submit_for_review(task=task, user=author)
    task_services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    assert task.status == TaskStatus.PUBLISHED

    # What an API client is shown: the trace as base64 of its exact bytes, the
    # schema, how each field is matched; never the key, the key script or answers.
    detail = client.get(f"/api/v1/tasks/{SLUG}/").json()
    shown = {f["path"]: f for f in detail["files"]}
    assert set(shown) == {"statement.md", "traces/rank0.json.gz", "answer.schema.json"}
    trace = shown["traces/rank0.json.gz"]
    assert trace["encoding"] == "base64"
    stored = (BUNDLE / "traces" / "rank0.json.gz").read_bytes()
    assert base64.b64decode(trace["content"]) == stored
    assert shown["answer.schema.json"]["encoding"] == "utf-8"
    assert detail["grading"]["fields"]["fixes"] == {"type": "set", "points": 2, "min_f1": 0.66}
    text = json.dumps(detail)
    for secret in (
        "key.json",
        "derive_key",
        "expert.json",
        'remove_host_syncs"]',
        *key["evidence"],
    ):
        assert secret not in text, secret

    # Answers over the API, graded by the worker.
    right, wrong = answer(client, expert), answer(client, distractor)
    right_body, wrong_body = graded(client, right), graded(client, wrong)
    assert right_body["verdict"] == "accepted", right_body
    assert wrong_body["verdict"] == "wrong_answer", wrong_body
    assert right_body["grading"]["metrics"]["strict_score"] == 1.0
    declared = load_bundle(BUNDLE).grading["negative_scores"]["bad/distractor.json"]
    assert wrong_body["grading"]["metrics"]["partial_score"] == pytest.approx(declared)
    fields = {f["name"]: f for f in wrong_body["grading"]["report"]["fields"]}
    assert fields["bottleneck"]["hit"] is False and fields["dominant_kernel"]["hit"] is True
    assert "expected" not in json.dumps(wrong_body["grading"])
    assert 'host_sync"' not in json.dumps(wrong_body), "the key's category stays hidden"
    report = GradingRun.objects.get(submission_id=wrong).report
    assert {f["name"]: f["expected"] for f in report["fields"]}["bottleneck"] == "host_sync"

    # The submission page: the answer's fields and why each missed, no key.
    browser = Client()
    browser.force_login(pipeline)
    page = browser.get(f"/submissions/{wrong}/").content.decode()
    assert 'data-field="bottleneck"' in page and 'data-field="evidence"' in page
    assert "is not the bottleneck" in page
    assert "&quot;host_sync&quot;" not in page and key["evidence"][0] not in page
    assert "Correctness" not in page, "a kernel's sections have nothing to show here"
    # ...and a link to the trace's timeline with the answer's citations marked.
    link = re.search(r'href="(/tasks/prof-host-sync/timeline/\?[^"]+)" data-timeline-link', page)
    assert link is not None
    drawn = browser.get(html.unescape(link.group(1))).content.decode()
    cited = json.loads(distractor)["evidence"]
    marked = re.search(rf"The answer cites {len(cited)} ids; (\d+) events", drawn)
    assert marked is not None and int(marked.group(1)) == 2 * len(cited), "launch and kernel"

    # Blind review: the reviewer sees the key beside the answer and its explanation.
    slot = review_services.assignment_claim_next(reviewer=reviewer)
    assert slot is not None and slot.submission_id == right
    reviewing = Client()
    reviewing.force_login(reviewer)
    page = reviewing.get(f"/review/items/{slot.pk}/").content.decode()
    assert 'data-field="idle_after_syncs_us"' in page
    assert f"{key['idle_after_syncs_us']}" in page, "the key's value, for the reviewer"
    assert 'data-answer-text="explanation"' in page
    assert "cudaStreamSynchronize" in page  # from the expert's explanation
    assert "/tasks/prof-host-sync/timeline/?file=traces%2Frank0.json.gz" in page
    review_services.review_submit(
        assignment_id=slot.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Names the .item() chain and the idle that follows; the fix is right.",
            scores={"explanation": review_services.ScoreInput(level=3)},
        ),
    )
    assert ReviewOutcome.objects.get(submission_id=right).decision == "accepted"

    # The export: the accepted answer as the completion, the prompt without the key.
    owner = exporter("erin")
    definition = define(owner, slug="profiling-sft", filters={"tasks": [SLUG]})
    rows = all_rows(build(definition, owner))
    assert [row["submission_id"] for row in rows] == [right], "the honest answer is kept"
    (row,) = rows
    prompt, completion = (m["content"] for m in row["messages"])
    assert json.loads(completion.split("```json\n", 1)[1].split("```", 1)[0]) == json.loads(expert)
    assert "gzip data" in prompt and "answer.schema.json" in prompt
    for secret in key["evidence"]:
        assert secret not in prompt
    assert row["kind"] == "profiling" and json.loads(row["metrics"])["strict_score"] == 1.0
