"""Validating a task: its expert solution must be accepted and every negative
example must get the verdict it names. Writes here; the jobs are in jobs.py.

A validation run grades the draft's files through the same queue, sandbox and
grader as submissions, one job per file, and records each verdict beside the
expected one. The run passes when every file got its expected verdict.
"""

from __future__ import annotations

import posixpath
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from benchwright.state import transition
from graders import registry
from graders.reports import storable
from graders.verdicts import Verdict

from .models import (
    VALIDATION_TRANSITIONS,
    FileRole,
    Task,
    TaskFile,
    ValidationResult,
    ValidationRun,
    ValidationStatus,
)
from .selectors import grading_payload
from .services.manifests import task_draft_hash

ACCEPTED = Verdict.ACCEPTED.value


class NothingToValidate(Exception):
    """The draft has no solution file to grade."""


def _candidates(task: Task) -> list[TaskFile]:
    return list(task.files.filter(role__in=[FileRole.SOLUTION, FileRole.NEGATIVE]).order_by("path"))


@transaction.atomic
def validation_start(*, task: Task, user: User | None) -> ValidationRun:
    """Start grading the draft's solution and negatives; jobs go out on commit."""

    candidates = _candidates(task)
    if not any(f.role == FileRole.SOLUTION for f in candidates):
        raise NothingToValidate(f"{task.slug} has no file with role 'solution' to validate")
    run = ValidationRun.objects.create(
        task=task, content_hash=task_draft_hash(task), created_by=user
    )
    results = ValidationResult.objects.bulk_create(
        ValidationResult(
            run=run,
            path=f.path,
            role=f.role,
            expected_verdict=ACCEPTED if f.role == FileRole.SOLUTION else f.expected_verdict,
        )
        for f in candidates
    )
    payload = grading_payload(
        slug=task.slug,
        kind=task.kind,
        hardware=task.hardware,
        grading=task.grading,
        files=task.files.all(),
    )
    by_path = {f.path: f for f in candidates}
    messages = [
        {
            **payload,
            "validation_result_id": result.pk,
            # Graded as a submission would be: the candidate alone, under its own name.
            "submission_files": {posixpath.basename(result.path): by_path[result.path].content},
        }
        for result in results
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
