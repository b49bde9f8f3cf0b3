"""Grading jobs. Thin: each takes ids or a plain message and calls a service.

``run_grading_job`` runs on sandbox hosts, which hold no database credentials:
it touches only the message it was given and the grading library (``graders``), and
sends its report back through the broker to ``store_grading_job``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery import Task, shared_task
from django.conf import settings

from benchwright.celery import redelivered

STORE_QUEUE = "grading.store"


@shared_task(name="submissions.grade", acks_late=True, reject_on_worker_lost=True)
def grade_submission_job(submission_id: int) -> str:
    """Claim the submission and send it to the grading queue for its hardware."""
    from . import services
    from .models import Submission

    if not services.submission_claim(submission_id=submission_id):
        return "not claimed"
    submission = Submission.objects.select_related("task_version").get(pk=submission_id)
    queue = services.grading_queue_for(submission.task_version)
    run_grading_job.apply_async(args=(services.grading_message(submission),), queue=queue)
    return queue


@shared_task(name="submissions.run_grading", bind=True, acks_late=True, reject_on_worker_lost=True)
def run_grading_job(self: Task, message: dict[str, Any]) -> str:
    """Grade in a sandbox (no database here) and hand the report to the trusted side.

    A message delivered again after its worker died is not graded again: whatever
    killed the worker would kill the next one too. It comes back as the platform's
    failure of this attempt, and the trusted side decides whether to try once more."""
    from graders.worker import grade_message, lost_worker_report

    if redelivered(self):
        report = lost_worker_report()
    else:
        report = grade_message(message, backend_name=settings.SANDBOX_BACKEND)
    store_grading_job.apply_async(
        args=(message["submission_id"], message["attempt"], report), queue=STORE_QUEUE
    )
    return str(report.get("verdict"))


@shared_task(
    name="submissions.store_grading",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    max_retries=5,
)
def store_grading_job(submission_id: int, attempt: int, report: dict[str, Any]) -> str:
    from . import services

    run = services.grading_store(submission_id=submission_id, attempt=attempt, report=report)
    return run.verdict if run is not None else "stale"


@shared_task(name="submissions.sweep_stuck")
def sweep_stuck_job() -> list[int]:
    from . import services

    return services.submissions_sweep_stuck(
        older_than=timedelta(seconds=settings.GRADING_STUCK_AFTER_S)
    )


@shared_task(name="submissions.ping")
def ping_job(value: str) -> str:
    """A round trip through the broker and a worker, used by health checks and tests."""
    return f"pong:{value}"
