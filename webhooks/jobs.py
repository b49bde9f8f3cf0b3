"""Webhook jobs: thin, taking ids and calling services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="webhooks.deliver", acks_late=True, reject_on_worker_lost=True)
def deliver_webhook_job(delivery_id: int, attempt: int) -> str:
    from . import services

    return services.delivery_attempt(delivery_id=delivery_id, attempt=attempt)


@shared_task(name="webhooks.sweep")
def sweep_deliveries_job() -> list[int]:
    """Periodic: re-send deliveries whose retry message was lost."""
    from . import services

    return services.deliveries_sweep()
