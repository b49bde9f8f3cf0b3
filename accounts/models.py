from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from benchwright.state import TimeStamped


class ApiToken(TimeStamped):
    """A bearer token. Only the SHA-256 of the token is stored; its prefix finds
    the row. The token itself is shown once, when it is created."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    max_submissions_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Empty: the platform default."
    )
    max_sandbox_seconds_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Empty: the platform default."
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # A user's own tokens, newest first (token management endpoints).
            models.Index(fields=["user", "created_at"], name="apitoken_user_created"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    @property
    def submissions_per_day(self) -> int:
        if self.max_submissions_per_day is not None:
            return self.max_submissions_per_day
        return int(settings.API_DAILY_SUBMISSIONS)

    @property
    def sandbox_seconds_per_day(self) -> int:
        if self.max_sandbox_seconds_per_day is not None:
            return self.max_sandbox_seconds_per_day
        return int(settings.API_DAILY_SANDBOX_SECONDS)


class IdempotencyRecord(models.Model):
    """The response to a POST sent with an Idempotency-Key, replayed on a retry.

    The row is inserted in the same transaction as the work it guards, so a
    concurrent request with the same key waits on the unique index and then
    finds the committed response (or, if the first rolled back, does the work).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    response_status = models.PositiveSmallIntegerField(null=True)
    response_body = models.JSONField(null=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_per_user"),
        ]
        indexes = [
            # Purging expired keys.
            models.Index(fields=["expires_at"], name="idempotency_expires"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"
