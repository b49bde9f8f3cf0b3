"""Periodic review jobs. Thin: each calls a service.

Schedule (celery beat; the entries belong in ``CELERY_BEAT_SCHEDULE``):
``reviews.expire_claims`` every minute and ``reviews.sweep`` every five.
Claims also expire lazily whenever a reviewer asks for the next item, so the
queue is right even when beat is not running.
"""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task

# A graded submission not in the queue after this long missed its on-commit hook.
SWEEP_GRACE = timedelta(minutes=2)


@shared_task(name="reviews.expire_claims")
def expire_claims_job() -> list[int]:
    from . import services

    return services.assignments_expire()


@shared_task(name="reviews.sweep")
def sweep_job() -> list[int]:
    from . import services

    return services.review_queue_sweep(graded_before=SWEEP_GRACE)
