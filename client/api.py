"""A small HTTP client for /api/v1/: errors as exceptions, retries where they are safe."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = {429, 502, 503, 504}


class ApiError(Exception):
    """An error answer from the API (or no answer at all: ``status`` 0)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        self.retry_after = retry_after


def _error_from(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
        error = body["error"]
        code, message, fields = str(error["code"]), str(error["message"]), error.get("fields")
    except (ValueError, KeyError, TypeError):
        code, message, fields = "http_error", response.text[:500] or response.reason_phrase, None
    retry_after = response.headers.get("Retry-After")
    return ApiError(
        response.status_code,
        code,
        message,
        fields,
        float(retry_after) if retry_after and retry_after.isdigit() else None,
    )


class BenchwrightClient:
    """``base_url`` defaults to $BENCHWRIGHT_URL (else http://127.0.0.1:8000) and
    ``token`` to $BENCHWRIGHT_TOKEN.

    GETs, and POSTs that carry an Idempotency-Key, are retried on connection
    errors, 502/503/504 and rate limiting (429 ``throttled``, after Retry-After);
    a spent daily quota (429 ``quota_exceeded``) is raised at once.
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 4,
        max_wait_s: float = 120.0,
    ) -> None:
        self.base_url = (base_url or os.environ.get("BENCHWRIGHT_URL") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("BENCHWRIGHT_TOKEN")
        headers = {"User-Agent": "benchwright-client/1", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BenchwrightClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Transport ---------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send a request and return its decoded JSON body (None for 204)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        retriable = method == "GET" or idempotency_key is not None
        clean = {k: v for k, v in (params or {}).items() if v not in (None, "")}
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(
                    method, path, json=json, params=clean, headers=headers
                )
            except httpx.TransportError as exc:
                if not retriable or attempt == self.max_retries:
                    raise ApiError(0, "connection_error", f"{self.base_url}: {exc}") from exc
                self._sleep(attempt, None)
                continue
            if response.status_code < 400:
                return response.json() if response.content else None
            error = _error_from(response)
            again = retriable or error.code == "throttled"
            if (
                response.status_code in RETRY_STATUSES
                and error.code != "quota_exceeded"
                and again
                and attempt < self.max_retries
            ):
                self._sleep(attempt, error.retry_after)
                continue
            raise error
        raise AssertionError("unreachable")

    def _sleep(self, attempt: int, retry_after: float | None) -> None:
        delay = retry_after if retry_after is not None else min(30.0, 0.5 * 2**attempt)
        time.sleep(min(self.max_wait_s, delay) + random.uniform(0, 0.25))

    def paginate(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        """Every item of a cursor-paginated list."""
        page = self.request("GET", path, params=params)
        while True:
            yield from page["results"]
            if not page.get("next"):
                return
            page = self.request("GET", page["next"])

    # Endpoints ---------------------------------------------------------------

    def me(self) -> Any:
        return self.request("GET", "/api/v1/me/")

    def tasks(self, **filters: Any) -> list[Any]:
        """Published tasks; filters: kind, difficulty, hardware, tags ("a,b": all of them)."""
        return list(self.paginate("/api/v1/tasks/", filters))

    def task(self, slug: str) -> Any:
        return self.request("GET", f"/api/v1/tasks/{slug}/")

    def submit(
        self,
        *,
        task: str,
        model: str,
        files: Mapping[str, str],
        run_id: str = "",
        labels: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        body = submission_item(task=task, model=model, files=files, run_id=run_id, labels=labels)
        return self.request(
            "POST", "/api/v1/submissions/", json=body, idempotency_key=idempotency_key
        )

    def submit_batch(
        self, items: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> Any:
        """Up to 1,000 items (see ``submission_item``), created all or none."""
        return self.request(
            "POST",
            "/api/v1/submissions/batch/",
            json={"submissions": list(items)},
            idempotency_key=idempotency_key,
        )

    def submission(self, submission_id: int) -> Any:
        return self.request("GET", f"/api/v1/submissions/{submission_id}/")

    def submissions(self, **filters: Any) -> Iterator[Any]:
        """Filters: task, model, run_id, status, verdict (comma-separated), created_after,
        created_before, page_size."""
        return self.paginate("/api/v1/submissions/", filters)

    def summary(self, **filters: Any) -> Any:
        return self.request("GET", "/api/v1/submissions/summary/", params=filters)

    def cancel(self, submission_id: int) -> Any:
        return self.request("POST", f"/api/v1/submissions/{submission_id}/cancel/")

    def regrade(self, submission_id: int) -> Any:
        return self.request("POST", f"/api/v1/submissions/{submission_id}/regrade/")


def submission_item(
    *,
    task: str,
    model: str,
    files: Mapping[str, str],
    run_id: str = "",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One submission as the API takes it."""
    return {
        "task": task,
        "model": model,
        "run_id": run_id,
        "labels": dict(labels or {}),
        "files": [{"path": path, "content": content} for path, content in files.items()],
    }
