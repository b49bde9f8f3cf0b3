"""JSON request bodies, size-capped before they are read into memory."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import BaseParser


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"
    default_detail = "The request body is too large."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class LimitedJSONParser(BaseParser):
    """UTF-8 JSON only. The view's ``max_body_bytes`` (default
    ``settings.API_MAX_BODY_BYTES``) caps the body."""

    media_type = "application/json"

    def parse(
        self,
        stream: IO[bytes] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        view = (parser_context or {}).get("view")
        limit = int(getattr(view, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES)
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise RequestTooLarge(f"the request body is larger than {limit} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"the body is not valid UTF-8: {exc.reason}") from None
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise exceptions.ParseError(f"JSON parse error: {exc}") from None
