from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchwright.state import TimeStamped


class Event(models.TextChoices):
    SUBMISSION_GRADED = "submission.graded"
    SUBMISSION_REVIEWED = "submission.reviewed"


class WebhookEndpoint(TimeStamped):
    """A client's callback URL. Events about the client's own submissions are
    POSTed there, signed per Standard Webhooks with ``secret``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.URLField(max_length=500)
    # The signing key must be recoverable to sign; it is shown to its owner once.
    secret = models.CharField(max_length=100)
    events = models.JSONField(default=list)
    description = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Fan-out on an event: a submitter's active endpoints.
            models.Index(fields=["user", "is_active"], name="webhook_user_active"),
        ]

    def __str__(self) -> str:
        return self.url


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


DELIVERY_TRANSITIONS: dict[str, frozenset[str]] = {
    DeliveryStatus.PENDING: frozenset({DeliveryStatus.DELIVERED, DeliveryStatus.FAILED}),
    DeliveryStatus.DELIVERED: frozenset(),
    DeliveryStatus.FAILED: frozenset(),
}


class WebhookDelivery(TimeStamped):
    """One event for one endpoint. The body and its ``webhook-id`` stay the same
    across retries, so the receiver can deduplicate."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    message_id = models.UUIDField(default=uuid.uuid4, unique=True)
    event = models.CharField(max_length=40, choices=Event.choices)
    body = models.TextField(help_text="The JSON payload exactly as sent.")
    status = models.CharField(
        max_length=20, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=DeliveryStatus.values), name="delivery_status_valid"
            )
        ]
        indexes = [
            # An endpoint's delivery log, newest first.
            models.Index(fields=["endpoint", "id"], name="delivery_endpoint_id"),
            # Pending deliveries past due (a sweep after a lost retry message).
            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_next"),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.endpoint_id}: {self.status}"

    @property
    def webhook_id(self) -> str:
        return f"msg_{self.message_id.hex}"


class WebhookAttempt(TimeStamped):
    """One POST of a delivery: what came back."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_excerpt = models.TextField(blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="one_attempt_per_number")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}: {self.status_code}"
