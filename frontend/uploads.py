"""Size caps applied while an upload streams in, not after Django has stored it.

Django keeps large uploads in a temporary file before any view runs; a capped
view reads no more than its limit of any file. A file past the cap is skipped
and ``request.upload_refused`` names the limit, so the form can say why.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt, csrf_protect


class CappedUploadHandler(FileUploadHandler):
    """Stops reading a file once it passes ``limit`` bytes."""

    def __init__(self, request: HttpRequest, *, limit: int) -> None:
        super().__init__(request)
        self.limit = limit

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > self.limit:
            self.request.upload_refused = self.limit  # type: ignore[union-attr]
            raise SkipFile(f"larger than {self.limit} bytes")
        return raw_data  # the next handler stores it

    def file_complete(self, file_size: int) -> None:
        return None


def capped_upload(
    limit: int,
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Cap every uploaded file of the view at ``limit`` bytes.

    The handler must be in place before anything reads ``request.POST``, and the
    CSRF check reads it; so the check moves inside, after the handler (as Django's
    documentation prescribes for changing upload handlers), and still applies.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        protected = csrf_protect(view)

        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            request.upload_handlers.insert(0, CappedUploadHandler(request, limit=limit))
            return protected(request, *args, **kwargs)

        return csrf_exempt(wrapper)

    return decorator


def upload_refused(request: HttpRequest) -> int | None:
    """The cap an uploaded file of this request went past, if one did."""
    return getattr(request, "upload_refused", None)
