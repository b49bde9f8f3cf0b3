from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request


class ApiCursorPagination(CursorPagination):
    """Newest first by id: stable under concurrent inserts, no OFFSET scans."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request: Request) -> int:
        # DRF quietly falls back to the default on a bad value; say what is wrong instead.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise exceptions.ValidationError(
                {self.page_size_query_param: [f"an integer from 1 to {self.max_page_size}"]}
            )
        return int(raw)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] |= {"minimum": 1, "maximum": self.max_page_size}
        return parameters


def query_dict(request: Request) -> dict[str, Any]:
    """The query string as a plain dict (the last value of a repeated name). A plain
    dict, not a QueryDict, so that ``?status=`` is validated as the empty string
    it is instead of being taken for an absent parameter."""
    return {key: request.query_params.get(key) for key in request.query_params}
