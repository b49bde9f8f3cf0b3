"""Export jobs. Thin: each takes an id and calls a service."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="exports.build_snapshot", acks_late=True, reject_on_worker_lost=True)
def build_snapshot_job(snapshot_id: int) -> str:
    """Build one snapshot; a redelivered message finds it claimed and does nothing."""
    from . import services

    return services.snapshot_build(snapshot_id=snapshot_id)
