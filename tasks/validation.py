"""Validating a task: its expert solution must be accepted and every negative
example must get the verdict it names. Writes here; the jobs are in jobs.py.

A validation run grades the draft's files through the same queue, sandbox and
grader as submissions, one job per file, and records each verdict beside the
expected one. The run passes when every file got its expected verdict.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from benchwright.state import transition
from graders import registry
from graders.contract import TaskFileInfo, ValidationCandidate
from graders.reports import storable
from graders.verdicts import Verdict

from .models import (
    VALIDATION_TRANSITIONS,
    FileRole,
    Task,
    ValidationResult,
    ValidationRun,
    ValidationStatus,
)
from .selectors import grading_payload
from .services.manifests import task_draft_hash


class NothingToValidate(Exception):
    """The draft has no solution file to grade."""


def _candidates(task: Task, payload: dict[str, Any]) -> list[ValidationCandidate]:
    """What validating the draft grades, as its kind says: by default the solution and
    each negative, graded as a submission would be."""
    files = [
        TaskFileInfo(f.path, f.role, f.expected_verdict, f.content)
        for f in task.files.order_by("path")
    ]
    return registry.get(task.kind).validation_candidates(payload["manifest"], files)


@transaction.atomic
def validation_start(*, task: Task, user: User | None) -> ValidationRun:
    """Start grading the draft's solution and negatives; jobs go out on commit."""

    if not task.files.filter(role=FileRole.SOLUTION).exists():
        raise NothingToValidate(f"{task.slug} has no file with role 'solution' to validate")
    payload = grading_payload(
        slug=task.slug,
        kind=task.kind,
        hardware=task.hardware,
        grading=task.grading,
        files=task.files.all(),
    )
    candidates = _candidates(task, payload)
    run = ValidationRun.objects.create(
        task=task, content_hash=task_draft_hash(task), created_by=user
    )
    results = ValidationResult.objects.bulk_create(
        ValidationResult(run=run, path=c.path, role=c.role, expected_verdict=c.expected_verdict)
        for c in candidates
    )
    messages = [
        {
            **payload,
            "validation_result_id": result.pk,
            "submission_files": dict(candidate.submission_files),
            "overrides": dict(candidate.overrides),
        }
        for result, candidate in zip(results, candidates, strict=True)
    ]
    transaction.on_commit(lambda: _enqueue(messages, task.kind, task.hardware))
    return run


def _enqueue(messages: list[dict[str, Any]], kind: str, hardware: str) -> None:
    from django.conf import settings

    from .jobs import run_validation_item_job

    queue = registry.grading_queue(kind, hardware, settings.GRADING_GPU_POOLS)
    for message in messages:
        run_validation_item_job.apply_async(args=({**message, "queue": queue},), queue=queue)


@transaction.atomic
def validation_record(*, result_id: int, report: dict[str, Any]) -> ValidationResult | None:
    """Store one file's report; finish the run when it was the last. Safe to run twice."""
    result = ValidationResult.objects.select_for_update().filter(pk=result_id).first()
    if result is None or result.done:
        return None
    report = storable(report)
    result.verdict = str(report.get("verdict") or Verdict.INTERNAL_ERROR)
    result.report = report
    result.save(update_fields=["verdict", "report", "updated_at"])
    run = ValidationRun.objects.select_for_update().get(pk=result.run_id)
    if not run.results.filter(verdict="").exists():
        passed = all(r.passed for r in run.results.all())
        transition(
            ValidationRun.objects,
            run.pk,
            to=ValidationStatus.PASSED if passed else ValidationStatus.FAILED,
            allowed=VALIDATION_TRANSITIONS,
            finished_at=timezone.now(),
        )
    return result


def validation_passed_for_draft(task: Task) -> bool:
    """Whether the draft, exactly as it is now, passed a validation run."""

    return task.validation_runs.filter(
        content_hash=task_draft_hash(task), status=ValidationStatus.PASSED
    ).exists()
