"""``Idempotency-Key`` on POST: a retry with the same key and body gets the
original response and creates nothing; the same key with another body is refused.

Keys are per user and live 24 hours. Only successful (2xx) responses are kept:
an error leaves nothing behind, so a retry after fixing a problem, or after a
quota resets, does the work.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from django.db import transaction
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from . import services
from .access import request_user
from .errors import Conflict

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")

Handler = Callable[..., Response]


def fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{request.method}\n{request.path}\n{body}".encode()).hexdigest()


def idempotent(*, secret_fields: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
    """Decorate an APIView's ``post``.

    ``secret_fields`` name response fields that are shown once (a new token or
    signing secret): they are never stored, and a replay answers 409 with the
    created object's id instead of a copy without its secret.
    """

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
            key = request.headers.get(HEADER)
            if key is None:
                return handler(view, request, *args, **kwargs)
            if not _KEY.match(key):
                raise exceptions.ValidationError(
                    {HEADER: ["1 to 255 printable ASCII characters without spaces"]}
                )
            with transaction.atomic():
                claim = services.idempotency_begin(
                    user=request_user(request), key=key, fingerprint=fingerprint(request)
                )
                if isinstance(claim, services.Replay):
                    return _replay(claim, secret_fields)
                response = handler(view, request, *args, **kwargs)
                if 200 <= response.status_code < 300:
                    body = _without(response.data, secret_fields)
                    services.idempotency_finish(
                        record=claim, status=response.status_code, body=body
                    )
                else:
                    transaction.set_rollback(True)
            return response

        return wrapper

    return decorate


def _without(data: Any, fields: tuple[str, ...]) -> Any:
    if not fields or not isinstance(data, dict):
        return data
    return {k: v for k, v in data.items() if k not in fields} | {"_secret_withheld": True}


def _replay(claim: services.Replay, secret_fields: tuple[str, ...]) -> Response:
    body = claim.body
    if secret_fields and isinstance(body, dict) and body.get("_secret_withheld"):
        raise Conflict(
            f"this Idempotency-Key already created object {body.get('id')}; its secret was "
            "shown once in the first response. Revoke it and create a new one if it was lost.",
            "secret_already_shown",
        )
    return Response(body, status=claim.status, headers={REPLAYED_HEADER: "true"})
