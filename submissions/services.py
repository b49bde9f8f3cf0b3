"""Every write to submissions: creation, status changes, and storing grading results.

The grading pipeline (see jobs.py) is three jobs:

1. ``grade_submission_job`` (trusted, has the database) claims the submission
   (queued -> running) and sends a self-contained message to the grading queue
   for the task's hardware;
2. ``run_grading_job`` (sandbox host, no database credentials) grades it;
3. ``store_grading_job`` (trusted) stores the GradingRun and scores the
   automatic rubric criteria through ``grading_store`` below.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from benchwright.state import InvalidTransition, transition
from graders import registry
from graders.contract import RETRY
from graders.reports import report_number, storable
from graders.verdicts import Verdict
from rubrics import services as rubric_services
from rubrics.models import CriterionScore, ScoreSource
from tasks.models import TaskVersion
from tasks.selectors import grading_payload

from .fingerprint import solution_key
from .models import (
    SUBMISSION_TRANSITIONS,
    GradingRun,
    Submission,
    SubmissionFile,
    SubmissionStatus,
)
from .signals import send_on_commit, submission_graded

log = logging.getLogger(__name__)

# Internal errors (the platform's fault) are retried this many times before the
# submission is marked failed (``graders.contract.RETRY``); never blamed on the submission.
MAX_GRADING_ATTEMPTS = RETRY.max_attempts
INTERNAL_ERROR = Verdict.INTERNAL_ERROR.value
NEEDS_HARDWARE = Verdict.NEEDS_HARDWARE.value
TASK_ERROR = Verdict.TASK_ERROR.value


def submission_set_status(
    *, submission_id: int, to: str, from_: str | set[str] | None = None, **extra: Any
) -> None:
    """The one way a submission's status changes; raises InvalidTransition."""
    transition(
        Submission.objects,
        submission_id,
        to=to,
        allowed=SUBMISSION_TRANSITIONS,
        from_=from_,
        status_changed_at=timezone.now(),
        **extra,
    )


def submission_create(
    *,
    version: TaskVersion,
    submitter: User,
    files: Mapping[str, str],
    model_name: str = "",
    run_id: str = "",
    labels: Mapping[str, Any] | None = None,
    api_token_id: int | None = None,
) -> Submission:
    """Create a queued submission and enqueue its grading once the transaction commits."""
    submission = Submission.objects.create(
        task_version=version,
        submitter=submitter,
        model_name=model_name,
        run_id=run_id,
        labels=dict(labels or {}),
        status_changed_at=timezone.now(),
        api_token_id=api_token_id,
        code_key=solution_key(files.items()),
    )
    SubmissionFile.objects.bulk_create(
        SubmissionFile(submission=submission, path=path, content=content)
        for path, content in files.items()
    )
    enqueue_grading(submission.pk)
    return submission


@dataclass(frozen=True)
class NewSubmission:
    """One item of a batch: already validated (paths, sizes, a published version)."""

    version: TaskVersion
    files: Mapping[str, str]
    model_name: str = ""
    run_id: str = ""
    labels: Mapping[str, Any] = field(default_factory=dict)


@transaction.atomic
def submissions_create_batch(
    *,
    submitter: User,
    items: Sequence[NewSubmission],
    api_token_id: int | None = None,
) -> list[Submission]:
    """Create many queued submissions in one transaction with two bulk inserts, and
    enqueue their gradings once it commits: all of them, or none."""
    now = timezone.now()
    submissions = Submission.objects.bulk_create(
        Submission(
            task_version=item.version,
            submitter=submitter,
            model_name=item.model_name,
            run_id=item.run_id,
            labels=dict(item.labels),
            status_changed_at=now,
            created_at=now,
            api_token_id=api_token_id,
            code_key=solution_key(item.files.items()),
        )
        for item in items
    )
    SubmissionFile.objects.bulk_create(
        SubmissionFile(submission=submission, path=path, content=content, created_at=now)
        for submission, item in zip(submissions, items, strict=True)
        for path, content in item.files.items()
    )
    enqueue_grading_many([s.pk for s in submissions])
    return submissions


def enqueue_grading_many(submission_ids: Sequence[int]) -> None:
    """Enqueue many gradings on commit through one broker connection."""
    from .jobs import grade_submission_job

    def publish() -> None:
        with grade_submission_job.app.producer_or_acquire() as producer:
            for pk in submission_ids:
                grade_submission_job.apply_async(args=(pk,), producer=producer, ignore_result=True)

    transaction.on_commit(publish)


def enqueue_grading(submission_id: int, countdown: float = 0) -> None:
    from .jobs import grade_submission_job

    # ignore_result: nobody reads it, and asking for it would subscribe the web
    # process to a result channel per submission (a round trip and a leak).
    transaction.on_commit(
        lambda: grade_submission_job.apply_async(
            args=(submission_id,), countdown=countdown, ignore_result=True
        )
    )


def submission_claim(*, submission_id: int) -> bool:
    """queued -> running, counting the attempt. False when someone else holds it,
    so a redelivered job never grades twice."""
    try:
        submission_set_status(
            submission_id=submission_id,
            to=SubmissionStatus.RUNNING,
            from_=SubmissionStatus.QUEUED,
            attempts=F("attempts") + 1,
        )
    except InvalidTransition:
        return False
    return True


def submission_cancel(*, submission: Submission) -> None:
    submission_set_status(submission_id=submission.pk, to=SubmissionStatus.CANCELLED)


def submission_regrade(*, submission: Submission) -> None:
    """Queue a finished submission for a fresh grading."""
    submission_set_status(
        submission_id=submission.pk,
        to=SubmissionStatus.QUEUED,
        from_={
            SubmissionStatus.GRADED,
            SubmissionStatus.FAILED,
            SubmissionStatus.AWAITING_REVIEW,
            SubmissionStatus.REVIEWED,
        },
    )
    enqueue_grading(submission.pk)


def grading_queue_for(version: TaskVersion) -> str:
    """Queue named by hardware (``graders.registry.grading_queue``). A GPU target goes
    to its GPU pool when one is configured; otherwise the CPU pool checks correctness
    (Triton under the interpreter) and a CUDA submission there comes back as
    needs_hardware."""
    return registry.grading_queue(version.kind, version.hardware, settings.GRADING_GPU_POOLS)


def grading_message(submission: Submission) -> dict[str, Any]:
    """Everything the sandbox host needs, so it never touches the database.
    Hidden task files travel here only to the trusted grading host."""
    version = submission.task_version
    return {
        "submission_id": submission.pk,
        "attempt": submission.attempts,
        **grading_payload(
            slug=version.task.slug,
            kind=version.kind,
            hardware=version.hardware,
            grading=version.grading,
            files=version.files.all(),
        ),
        "submission_files": {f.path: f.content for f in submission.files.all()},
    }


def _ran_on_target(report: Mapping[str, Any], version: TaskVersion) -> bool:
    # The grader names the hardware class it ran on ("cpu", "h100", ...).
    name = str((report.get("hardware") or {}).get("name") or "").lower()
    return bool(name) and name == version.hardware


def _store_automatic_scores(run: GradingRun) -> list[CriterionScore]:
    """The pinned rubric's automatic criteria, scored from the run's report."""
    version = run.submission.task_version
    scored = rubric_services.score_automatic(
        getattr(version, "rubric", None),
        report=run.report,
        kind=version.kind,
        on_target=run.target_hardware,
    )
    return CriterionScore.objects.bulk_create(
        CriterionScore(
            submission=run.submission,
            criterion=score.criterion,
            grading_run=run,
            source=ScoreSource.AUTOMATIC,
            points=score.points,
            met=score.met,
            detail=score.detail,
        )
        for score in scored
    )


@transaction.atomic
def grading_store(
    *, submission_id: int, attempt: int, report: Mapping[str, Any]
) -> GradingRun | None:
    """Store one grading's report (trusted side). Safe to run twice: a second
    delivery of the same attempt changes nothing."""
    submission = Submission.objects.select_for_update().get(pk=submission_id)
    if submission.status != SubmissionStatus.RUNNING or submission.attempts != attempt:
        log.info("ignoring stale report for submission %s attempt %s", submission_id, attempt)
        return None
    report = storable(report)  # what the submission printed or named, as PostgreSQL takes it
    verdict = str(report.get("verdict") or INTERNAL_ERROR)
    version = submission.task_version
    kind = registry.get(version.kind) if registry.is_kind(version.kind) else None
    metrics = kind.metrics_of(report) if kind is not None else {}
    run = GradingRun.objects.create(
        submission=submission,
        attempt=attempt,
        verdict=verdict,
        reason=str(report.get("reason") or "")[:5000],
        report=dict(report),
        hardware=str((report.get("hardware") or {}).get("name") or "")[:100],
        target_hardware=_ran_on_target(report, submission.task_version),
        harness_version=str(report.get("harness_version") or "")[:40],
        timing_mode=str(report.get("timing_mode") or "")[:20],
        reference_median_s=metrics.get("reference_median_s"),
        submission_median_s=metrics.get("submission_median_s"),
        speedup=metrics.get("speedup"),
        metrics=metrics,
        started_at=timezone.now() - timedelta(seconds=report_number(report, "duration_s") or 0),
        finished_at=timezone.now(),
    )
    if verdict == INTERNAL_ERROR:
        _retry_or_fail(submission, run)
        return run
    if verdict == TASK_ERROR:
        # The task's reference is broken: grading again cannot help, and the submission
        # is not at fault. Operators see the reference's error in the run's report.
        submission_set_status(
            submission_id=submission.pk, to=SubmissionStatus.FAILED, verdict=TASK_ERROR
        )
        log.error(
            "task %s: its reference failed grading submission %s: %s",
            submission.task_version.task.slug,
            submission.pk,
            str(report.get("operator_notes") or run.reason)[:2000],
        )
        return run
    _store_automatic_scores(run)
    submission_set_status(submission_id=submission.pk, to=SubmissionStatus.GRADED, verdict=verdict)
    # Reviews queue it and webhooks announce it (signals.py: after the commit, and a
    # receiver's failure never fails the grading).
    send_on_commit(submission_graded, sender=Submission, submission_id=submission.pk)
    return run


def _retry_or_fail(submission: Submission, run: GradingRun) -> None:
    """After an attempt that ended in the platform's failure (an internal error, a lost
    or hung job): queue the next attempt, or past the budget mark the submission
    failed. Every path that regrades goes through here, so none can loop forever."""
    if RETRY.should_retry(submission.attempts):
        submission_set_status(submission_id=submission.pk, to=SubmissionStatus.QUEUED)
        enqueue_grading(submission.pk, countdown=RETRY.delay_s(submission.attempts))
        return
    submission_set_status(
        submission_id=submission.pk, to=SubmissionStatus.FAILED, verdict=INTERNAL_ERROR
    )
    log.error("submission %s failed after %s attempts: %s", submission.pk, run.attempt, run.reason)


def submissions_sweep_stuck(*, older_than: timedelta) -> list[int]:
    """Settle submissions stuck in running (a worker died, a job hung) past their time
    limit: the attempt is recorded as the platform's failure, with why, and the next
    one is queued within the attempt budget; past it the submission fails. Returns
    the submissions swept."""
    cutoff = timezone.now() - older_than
    stuck = list(
        Submission.objects.filter(
            status=SubmissionStatus.RUNNING, status_changed_at__lt=cutoff
        ).values_list("pk", flat=True)
    )
    swept = []
    for pk in stuck:
        with transaction.atomic():
            submission = Submission.objects.select_for_update().get(pk=pk)
            if submission.status != SubmissionStatus.RUNNING or (
                submission.status_changed_at and submission.status_changed_at >= cutoff
            ):
                continue
            run, _ = GradingRun.objects.get_or_create(
                submission=submission,
                attempt=submission.attempts,
                defaults={
                    "verdict": INTERNAL_ERROR,
                    "reason": (
                        f"attempt {submission.attempts} did not finish within "
                        f"{int(older_than.total_seconds())} s: its grading job was lost or hung"
                    ),
                    "finished_at": timezone.now(),
                },
            )
            _retry_or_fail(submission, run)
        swept.append(pk)
    return swept
