"""Answering htmx requests: a fragment for a swap, the whole page otherwise."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request swaps a fragment in; a history restore needs the whole page."""
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def page_or_fragment(
    request: HttpRequest, page: str, fragment: str, context: dict[str, Any]
) -> HttpResponse:
    """The whole page, or for htmx only the fragment it swaps in."""
    response = render(request, fragment if wants_fragment(request) else page, context)
    # The same URL answers with a fragment or a page: caches must keep them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response
