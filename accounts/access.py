"""What the current API request may do: its scopes and the subject its quotas count against."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.request import Request

from . import scopes
from .models import ApiToken
from .services import QuotaSubject


def request_user(request: Request) -> User:
    """The authenticated user; only for views whose permission requires one."""
    user = request.user
    if not isinstance(user, User):
        raise TypeError("request_user() needs an authenticated request")
    return user


def request_token(request: Request) -> ApiToken | None:
    return request.auth if isinstance(request.auth, ApiToken) else None


def request_roles(request: Request) -> frozenset[str]:
    cached = getattr(request, "_bw_roles", None)
    if cached is None:
        cached = scopes.user_roles(request.user)
        request._bw_roles = cached  # type: ignore[attr-defined]
    return cached


def request_scopes(request: Request) -> frozenset[str]:
    """A token's scopes that its user's roles still allow; on a browser session,
    every scope the roles allow."""
    if not request.user.is_authenticated:
        return frozenset()
    allowed = scopes.scopes_allowed(request_roles(request))
    token = request_token(request)
    if token is None:
        return allowed
    return allowed & frozenset(token.scopes)


def quota_subject(request: Request) -> QuotaSubject:
    from django.conf import settings

    token = request_token(request)
    if token is not None:
        return QuotaSubject(
            key=f"token:{token.pk}",
            user_id=token.user_id,
            token_id=token.pk,
            submissions_per_day=token.submissions_per_day,
            sandbox_seconds_per_day=token.sandbox_seconds_per_day,
        )
    return QuotaSubject(
        key=f"user:{request.user.pk}",
        user_id=request_user(request).pk,
        token_id=None,
        submissions_per_day=int(settings.API_DAILY_SUBMISSIONS),
        sandbox_seconds_per_day=int(settings.API_DAILY_SANDBOX_SECONDS),
    )
