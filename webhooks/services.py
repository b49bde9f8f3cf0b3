"""Webhook endpoints, events and their signed delivery with retries.

Events are about a client's own submissions. ``submission_graded`` is called by
``submissions.services.grading_store`` once its transaction commits; the
reviews app calls ``submission_reviewed`` the same way when a review is final.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from benchwright.state import InvalidTransition, transition

from . import addresses, signing
from .models import (
    DELIVERY_TRANSITIONS,
    DeliveryStatus,
    Event,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)

log = logging.getLogger(__name__)

EXCERPT_CHARS = 500
USER_AGENT = "Benchwright-Webhooks/1"


class EndpointError(ValueError):
    """The endpoint cannot be registered; the message says why."""


def endpoint_create(
    *, user: User, url: str, events: list[str], description: str = ""
) -> tuple[WebhookEndpoint, str]:
    """Register a callback URL; returns the endpoint and its signing secret (shown once)."""
    unknown = sorted(set(events) - set(Event.values))
    if unknown or not events:
        raise EndpointError(f"events must be some of {', '.join(Event.values)}")
    try:
        addresses.check_callback_url(url)
    except addresses.RefusedUrl as exc:
        raise EndpointError(str(exc)) from None
    secret = signing.new_secret()
    endpoint = WebhookEndpoint.objects.create(
        user=user,
        url=url,
        secret=secret,
        events=[e for e in Event.values if e in events],
        description=description,
    )
    return endpoint, secret


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


# Events ---------------------------------------------------------------------


def submission_graded(*, submission_id: int) -> list[int]:
    return event_publish(submission_id=submission_id, event=Event.SUBMISSION_GRADED)


def submission_reviewed(*, submission_id: int) -> list[int]:
    """A submission's review is final (``reviews.signals.submission_reviewed``)."""
    return event_publish(submission_id=submission_id, event=Event.SUBMISSION_REVIEWED)


@transaction.atomic
def event_publish(*, submission_id: int, event: str) -> list[int]:
    """Queue one delivery of ``event`` per active endpoint of the submitter that
    subscribed to it; returns the delivery ids."""
    from submissions.models import Submission
    from submissions.selectors import submission_event_data

    submission = Submission.objects.select_related("task_version__task").get(pk=submission_id)
    endpoints = [
        e
        for e in WebhookEndpoint.objects.filter(user_id=submission.submitter_id, is_active=True)
        if event in e.events
    ]
    if not endpoints:
        return []
    payload = {
        "type": event,
        "timestamp": timezone.now().isoformat().replace("+00:00", "Z"),
        "data": submission_event_data(submission),
    }
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=e, event=event, body=body, next_attempt_at=now) for e in endpoints
    )
    ids = [d.pk for d in deliveries]
    transaction.on_commit(lambda: _enqueue(ids))
    return ids


def _enqueue(delivery_ids: list[int], countdown: float = 0) -> None:
    from .jobs import deliver_webhook_job

    for pk in delivery_ids:
        deliver_webhook_job.apply_async(args=(pk, 1), countdown=countdown, ignore_result=True)


# Delivery -------------------------------------------------------------------


def retry_delays() -> list[float]:
    return [float(d) for d in settings.WEBHOOK_RETRY_DELAYS_S]


def delivery_attempt(*, delivery_id: int, attempt: int) -> str:
    """POST attempt ``attempt`` (1-based) of a delivery and record what came back.

    Safe to run twice: the attempt is claimed with a conditional update first,
    so a redelivered job message sends nothing.
    """
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING, attempts=attempt - 1
    ).update(attempts=attempt, next_attempt_at=None, updated_at=timezone.now())
    if claimed != 1:
        return "not claimed"
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    if not delivery.endpoint.is_active:
        _finish(delivery, DeliveryStatus.FAILED, status_code=None)
        return "endpoint disabled"
    status_code, excerpt, error, duration_ms = _post(delivery)
    WebhookAttempt.objects.create(
        delivery=delivery,
        number=attempt,
        status_code=status_code,
        response_excerpt=excerpt,
        error=error[:500],
        duration_ms=duration_ms,
    )
    if status_code is not None and 200 <= status_code < 300:
        _finish(delivery, DeliveryStatus.DELIVERED, status_code=status_code)
        return "delivered"
    return _schedule_retry(delivery, attempt, status_code)


def _post(delivery: WebhookDelivery) -> tuple[int | None, str, str, int]:
    """(status code, response excerpt, error, duration in ms). Never raises."""
    endpoint = delivery.endpoint
    started = time.monotonic()
    try:
        pinned = addresses.check_callback_url(endpoint.url)
        headers = signing.headers(
            endpoint.secret, delivery.webhook_id, int(time.time()), delivery.body
        )
        headers["user-agent"] = USER_AGENT
        headers["host"] = pinned.host
        # No redirects (they could point anywhere) and no proxies from the environment.
        with httpx.Client(
            follow_redirects=False, trust_env=False, timeout=settings.WEBHOOK_TIMEOUT_S
        ) as client:
            response = client.post(
                pinned.url,  # the checked address: the name is not resolved again
                content=delivery.body.encode(),
                headers=headers,
                extensions={"sni_hostname": pinned.server_name},
            )
            excerpt = response.content[: EXCERPT_CHARS * 4].decode("utf-8", "replace")
        code: int | None = response.status_code
        error = ""
    except (addresses.RefusedUrl, httpx.HTTPError) as exc:
        code, excerpt, error = None, "", f"{type(exc).__name__}: {exc}"
    elapsed_ms = int((time.monotonic() - started) * 1000)
    # PostgreSQL text cannot hold NUL; a receiver's reply is arbitrary bytes.
    return (
        code,
        excerpt[:EXCERPT_CHARS].replace("\x00", "\ufffd"),
        error.replace("\x00", ""),
        (elapsed_ms),
    )


def _finish(delivery: WebhookDelivery, status: str, *, status_code: int | None) -> None:
    extra: dict[str, Any] = {"last_status_code": status_code}
    if status == DeliveryStatus.DELIVERED:
        extra["delivered_at"] = timezone.now()
    try:
        transition(
            WebhookDelivery.objects,
            delivery.pk,
            to=status,
            allowed=DELIVERY_TRANSITIONS,
            **extra,
        )
    except InvalidTransition:
        log.warning("delivery %s finished twice", delivery.pk)


def _schedule_retry(delivery: WebhookDelivery, attempt: int, status_code: int | None) -> str:
    delays = retry_delays()
    if attempt > len(delays):
        _finish(delivery, DeliveryStatus.FAILED, status_code=status_code)
        return "failed"
    delay = delays[attempt - 1]
    WebhookDelivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING).update(
        next_attempt_at=timezone.now() + timedelta(seconds=delay),
        last_status_code=status_code,
        updated_at=timezone.now(),
    )
    from .jobs import deliver_webhook_job

    deliver_webhook_job.apply_async(
        args=(delivery.pk, attempt + 1), countdown=delay, ignore_result=True
    )
    return f"retry in {delay:g} s"


def deliveries_sweep(*, grace: timedelta = timedelta(minutes=10)) -> list[int]:
    """Re-send pending deliveries whose retry message was lost (past due by ``grace``)."""
    cutoff = timezone.now() - grace
    due = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lt=cutoff
    ).values_list("pk", "attempts")
    from .jobs import deliver_webhook_job

    swept = []
    for pk, attempts in due:
        deliver_webhook_job.apply_async(args=(pk, attempts + 1), ignore_result=True)
        swept.append(pk)
    return swept
