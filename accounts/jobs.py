"""Periodic upkeep of API access records."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="accounts.purge_idempotency_keys")
def purge_idempotency_keys_job() -> int:
    from . import services

    return services.idempotency_purge_expired()
