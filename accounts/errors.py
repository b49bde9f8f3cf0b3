"""Every API error has one shape::

    {"error": {"code": "invalid", "message": "files.0.path: ...", "fields": {...}}}

``code`` is stable and machine-readable, ``message`` is for people, ``fields``
(validation errors only) maps each offending field to its messages, nested as
the request was.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from benchwright.state import InvalidTransition

from .services import IdempotencyMismatch, QuotaExceeded

log = logging.getLogger(__name__)


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The request conflicts with the current state of the resource."


class Unprocessable(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "unprocessable"
    default_detail = "The request cannot be processed."


class QuotaThrottled(exceptions.Throttled):
    default_code = "quota_exceeded"


def error_body(code: str, message: str, fields: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if fields is not None:
        body["fields"] = fields
    return {"error": body}


def _plain(detail: Any) -> Any:
    """ErrorDetail trees as plain strings, lists and dicts."""
    if isinstance(detail, dict):
        return {str(key): _plain(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_plain(item) for item in detail]
    return str(detail)


def _first_message(detail: Any, path: str = "") -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = str(key) if key != "non_field_errors" else ""
            return _first_message(value, f"{path}.{name}".strip(".") if name else path)
        return "invalid input"
    if isinstance(detail, list):
        for item in detail:
            return _first_message(item, path)
        return "invalid input"
    return f"{path}: {detail}" if path else str(detail)


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, InvalidTransition):
        return Conflict(str(exc), "invalid_transition")
    if isinstance(exc, QuotaExceeded):
        return QuotaThrottled(exc.retry_after_s, str(exc))
    if isinstance(exc, IdempotencyMismatch):
        return Unprocessable(
            "this Idempotency-Key was used in the last 24 hours with a different request "
            "(method, path or body); use a new key for a new request",
            "idempotency_key_reused",
        )
    return exc


def _code(exc: exceptions.APIException) -> str:
    detail = exc.detail
    code = getattr(detail, "code", None)
    if isinstance(code, str) and code != "invalid":
        return code
    return exc.default_code if isinstance(exc.default_code, str) else "error"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF's EXCEPTION_HANDLER: the error shape for every exception, 500s included."""
    exc = _translate(exc)
    set_rollback()
    if not isinstance(exc, exceptions.APIException):
        log.exception("unhandled API error", exc_info=exc)
        return Response(
            error_body("server_error", "An internal error occurred; it has been logged."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = str(getattr(exc, "auth_header", ""))
    wait = getattr(exc, "wait", None)
    if wait is not None:
        headers["Retry-After"] = str(max(1, int(wait + 0.999)))
    if isinstance(exc, exceptions.ValidationError):
        body = error_body("invalid", _first_message(exc.detail), _plain(exc.detail))
    elif isinstance(exc, exceptions.Throttled):
        code = "quota_exceeded" if isinstance(exc, QuotaThrottled) else "throttled"
        body = error_body(code, str(exc.detail))
    else:
        body = error_body(_code(exc), str(exc.detail))
    return Response(body, status=exc.status_code, headers=headers)


@csrf_exempt  # it changes nothing; a CSRF 403 here would be an HTML page
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any /api/ path that names no endpoint: a JSON 404, never the HTML page."""
    return JsonResponse(error_body("not_found", f"no API endpoint at {request.path}"), status=404)
