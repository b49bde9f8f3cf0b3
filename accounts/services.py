"""Every write to API access: tokens, daily quotas, idempotency records."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from . import scopes as scope_names
from .models import ApiToken, IdempotencyRecord

TOKEN_PREFIX = "bw_"  # noqa: S105 - a marker, not a secret
IDEMPOTENCY_TTL = timedelta(hours=24)
QUOTA_KEY_TTL_S = 2 * 86400


class TokenError(ValueError):
    """A token request that cannot be granted (unknown scope, scope the roles do not
    allow, expiry in the past); ``field`` names the offending input."""

    def __init__(self, message: str, field: str = "scopes") -> None:
        super().__init__(message)
        self.field = field


def token_hash(token: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(token.encode()).hexdigest()


def token_parse(token: str) -> tuple[str, str] | None:
    """``bw_<prefix>_<secret>`` -> (prefix, token); None when it is not that shape."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    prefix, sep, secret = token[len(TOKEN_PREFIX) :].partition("_")
    if not sep or len(prefix) != 12 or not secret or len(token) > 200:
        return None
    return prefix, token


def token_matches(api_token: ApiToken, token: str) -> bool:
    return hmac.compare_digest(api_token.token_hash, token_hash(token))


def token_create(
    *,
    user: User,
    name: str,
    scopes: list[str],
    expires_at: datetime | None = None,
    max_submissions_per_day: int | None = None,
    max_sandbox_seconds_per_day: int | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; returns the row and the token, which is never stored."""
    try:
        wanted = scope_names.normalise(scopes)
    except ValueError as exc:
        raise TokenError(str(exc)) from exc
    allowed = scope_names.scopes_allowed(scope_names.user_roles(user))
    refused = [s for s in wanted if s not in allowed]
    if refused:
        raise TokenError(f"your roles do not allow the scope(s): {', '.join(refused)}")
    if expires_at is not None and expires_at <= timezone.now():
        raise TokenError("expires_at is in the past", "expires_at")
    prefix = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=prefix,
        token_hash=token_hash(token),
        scopes=wanted,
        expires_at=expires_at,
        max_submissions_per_day=max_submissions_per_day,
        max_sandbox_seconds_per_day=max_sandbox_seconds_per_day,
    )
    return row, token


def token_revoke(*, token: ApiToken) -> None:
    """Revoke once; revoking again keeps the first time."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), updated_at=timezone.now()
    )


def token_touch(*, token: ApiToken) -> None:
    """Record use at most once a minute, so authentication is not a write per request."""
    now = timezone.now()
    stale = now - timedelta(minutes=1)
    if token.last_used_at is None or token.last_used_at < stale:
        # Conditional, so concurrent requests at the minute's turn write once.
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale)
        ).update(last_used_at=now)


# Daily quotas ---------------------------------------------------------------


class QuotaExceeded(Exception):
    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class QuotaSubject:
    """Who a quota applies to: a token, or a user on a browser session."""

    key: str
    user_id: int
    token_id: int | None
    submissions_per_day: int
    sandbox_seconds_per_day: int


def day_bounds(now: datetime | None = None) -> tuple[date, datetime, int]:
    """Today's UTC date, its start, and the seconds until tomorrow (the Retry-After)."""
    now = (now or timezone.now()).astimezone(UTC)
    start = datetime.combine(now.date(), time.min, tzinfo=UTC)
    return now.date(), start, max(1, int((start + timedelta(days=1) - now).total_seconds()))


class UsageCounters(Protocol):
    """What a quota counts, measured where it is made: the submissions app supplies
    these when it starts (``submissions.apps``), so that accounts, which every API
    view's permissions import, never imports submissions."""

    def submissions_since(self, subject: QuotaSubject, since: datetime) -> int: ...

    def sandbox_seconds_since(self, subject: QuotaSubject, since: datetime) -> float: ...


class _NothingCounted:
    def submissions_since(self, subject: QuotaSubject, since: datetime) -> int:
        return 0

    def sandbox_seconds_since(self, subject: QuotaSubject, since: datetime) -> float:
        return 0.0


_counters: UsageCounters = _NothingCounted()


def count_usage_with(counters: UsageCounters) -> None:
    global _counters
    _counters = counters


def sandbox_seconds_used(subject: QuotaSubject, since: datetime) -> float:
    return _counters.sandbox_seconds_since(subject, since)


def _quota_key(subject: QuotaSubject, day: date) -> str:
    return f"quota:submissions:{subject.key}:{day.isoformat()}"


def _submissions_counted(subject: QuotaSubject, since: datetime) -> int:
    return _counters.submissions_since(subject, since)


def submissions_used(subject: QuotaSubject, day: date) -> int:
    used = cache.get(_quota_key(subject, day))
    if used is None:
        _, start, _ = day_bounds()
        return _submissions_counted(subject, start)
    return int(used)


def _cached_sandbox_seconds(subject: QuotaSubject, since: datetime) -> float:
    # Grading time accrues minutes after a submission; a 30 s old sum is fresh enough
    # and spares every create an aggregate over the day's runs.
    key = f"quota:sandbox:{subject.key}:{since.date().isoformat()}"
    used = cache.get_or_set(key, lambda: sandbox_seconds_used(subject, since), 30)
    return float(used or 0.0)


def quota_consume(*, subject: QuotaSubject, count: int) -> None:
    """Count ``count`` new submissions against today's quotas, or raise QuotaExceeded.

    The counter is an atomic increment in the cache (Redis in production), seeded
    from the database when absent, so concurrent requests never overshoot and
    never queue on a row lock. Pair with ``quota_release`` if the submissions are
    then not created (see ``quota_reserved``).
    """
    today, start, retry_after = day_bounds()
    used_s = _cached_sandbox_seconds(subject, start)
    if used_s >= subject.sandbox_seconds_per_day:
        raise QuotaExceeded(
            f"daily sandbox time quota reached: {used_s:.0f} of "
            f"{subject.sandbox_seconds_per_day} s used today (UTC)",
            retry_after,
        )
    key = _quota_key(subject, today)
    try:
        used = cache.incr(key, count)
    except ValueError:  # the day's first request (or the key was evicted): seed it
        cache.add(key, _submissions_counted(subject, start), timeout=QUOTA_KEY_TTL_S)
        used = cache.incr(key, count)
    limit = subject.submissions_per_day
    if used > limit:
        quota_release(subject=subject, count=count)
        raise QuotaExceeded(
            f"daily submission quota reached: {used - count} of {limit} used today (UTC); "
            f"this request needs {count} more",
            retry_after,
        )


def quota_release(*, subject: QuotaSubject, count: int) -> None:
    today, _, _ = day_bounds()
    # A key that expired meanwhile is seeded from the database again.
    with suppress(ValueError):
        cache.decr(_quota_key(subject, today), count)


@contextmanager
def quota_reserved(*, subject: QuotaSubject, count: int) -> Iterator[None]:
    """Reserve quota around the block that creates the submissions; a failure in it
    gives the reservation back. Put the transaction inside, so a failed commit does too."""
    quota_consume(subject=subject, count=count)
    try:
        yield
    except BaseException:
        quota_release(subject=subject, count=count)
        raise


# Idempotency ----------------------------------------------------------------


class IdempotencyMismatch(Exception):
    """The key was used before with a different request."""


@dataclass(frozen=True)
class Replay:
    status: int
    body: Any


def idempotency_begin(*, user: User, key: str, fingerprint: str) -> IdempotencyRecord | Replay:
    """Claim ``key`` for this request, or return the stored response to replay.

    Must run inside the transaction that does the work (see IdempotencyRecord).
    """
    now = timezone.now()
    IdempotencyRecord.objects.filter(user=user, expires_at__lte=now).delete()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                user=user, key=key, fingerprint=fingerprint, expires_at=now + IDEMPOTENCY_TTL
            )
    except IntegrityError:
        pass
    existing = IdempotencyRecord.objects.get(user=user, key=key)
    if existing.fingerprint != fingerprint:
        raise IdempotencyMismatch(key)
    return Replay(status=existing.response_status or 200, body=existing.response_body)


def idempotency_purge_expired() -> int:
    """Delete expired keys (each user's are also purged whenever they send one)."""
    deleted, _ = IdempotencyRecord.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted


def idempotency_finish(*, record: IdempotencyRecord, status: int, body: Any) -> None:
    record.response_status = status
    record.response_body = body
    record.save(update_fields=["response_status", "response_body", "updated_at"])
