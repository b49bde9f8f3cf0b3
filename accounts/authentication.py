"""Bearer-token authentication for the API (``Authorization: Bearer bw_…``)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from . import services
from .models import ApiToken


class TokenFailed(exceptions.AuthenticationFailed):
    """A 401 whose code says which: token_invalid, token_expired or token_revoked."""


class TokenAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise TokenFailed("Authorization: Bearer takes exactly one token", "token_invalid")
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise TokenFailed("the token is not ASCII", "token_invalid") from None
        return self.authenticate_token(raw)

    def authenticate_token(self, raw: str) -> tuple[Any, ApiToken]:
        parsed = services.token_parse(raw)
        if parsed is None:
            raise TokenFailed("not a Benchwright API token", "token_invalid")
        prefix, token = parsed
        row = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
        if row is None or not services.token_matches(row, token):
            raise TokenFailed("unknown token", "token_invalid")
        if row.revoked_at is not None:
            raise TokenFailed("this token was revoked", "token_revoked")
        if row.expires_at is not None and row.expires_at <= timezone.now():
            raise TokenFailed("this token has expired", "token_expired")
        if not row.user.is_active:
            raise TokenFailed("this token's user is inactive", "token_invalid")
        services.token_touch(token=row)
        return row.user, row

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'
