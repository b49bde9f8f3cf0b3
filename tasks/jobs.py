"""Validation jobs: grade one candidate file in a sandbox, then store its verdict.

``run_validation_item_job`` runs on sandbox hosts (no database); the report
comes back through the broker to ``store_validation_item_job``.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.conf import settings

from graders.contract import RETRY
from graders.verdicts import Verdict

# Internal errors are the platform's fault: grade again (``graders.contract.RETRY``)
# before recording one.
MAX_ATTEMPTS = RETRY.max_attempts


@shared_task(
    name="tasks.run_validation_item", bind=True, acks_late=True, reject_on_worker_lost=True
)
def run_validation_item_job(self: Task, message: dict[str, Any], attempt: int = 1) -> str:
    from benchwright.celery import redelivered
    from graders.worker import grade_message, lost_worker_report

    if redelivered(self):  # its worker died mid-grading: count it, never loop
        report = lost_worker_report()
    else:
        report = grade_message(message, backend_name=settings.SANDBOX_BACKEND)
    verdict = str(report.get("verdict"))
    if verdict == Verdict.INTERNAL_ERROR and RETRY.should_retry(attempt):
        run_validation_item_job.apply_async(
            args=(message,),
            kwargs={"attempt": attempt + 1},
            countdown=RETRY.delay_s(attempt),
            queue=message["queue"],
        )
        return "retrying"
    store_validation_item_job.apply_async(
        args=(message["validation_result_id"], report), queue="grading.store"
    )
    return verdict


@shared_task(
    name="tasks.store_validation_item",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    max_retries=5,
)
def store_validation_item_job(result_id: int, report: dict[str, Any]) -> str:
    from .validation import validation_record

    result = validation_record(result_id=result_id, report=report)
    return result.verdict if result is not None else "stale"


@shared_task(name="tasks.check_engine_config", acks_late=True, reject_on_worker_lost=True)
def check_engine_config_job(manifest: dict[str, Any], files: dict[str, str], path: str) -> dict:
    """A serving draft's config through vLLM's own checks, on a grading host (where the
    serving environment is). The answer goes back through the result backend to the
    authoring page, which polls for it; nothing is stored."""
    from graders.serving.check import check_draft_config

    return check_draft_config(manifest, files, path)
