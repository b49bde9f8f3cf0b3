"""Scope checks. Object-level checks go through the ``*_for_user`` selectors."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .access import request_scopes


class MissingScope(exceptions.PermissionDenied):
    default_code = "missing_scope"


class HasScope(BasePermission):
    """The view names the scope each method needs in ``required_scopes``
    (``{"GET": "read", "POST": "submit"}``); a method it does not name is refused."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user.is_authenticated:
            raise exceptions.NotAuthenticated()
        required: dict[str, str | None] = getattr(view, "required_scopes", {})
        method = "GET" if request.method in ("HEAD", "OPTIONS") else str(request.method)
        if not hasattr(view, method.lower()):
            return True  # the view answers 405 Method Not Allowed
        if method not in required:
            return False
        scope = required[method]
        if scope is None or scope in request_scopes(request):
            return True
        raise MissingScope(f"this request needs the {scope!r} scope")
