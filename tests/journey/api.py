"""What a journey test does over the REST API as a solver's pipeline does it: submit
files for a task, then poll until the grading has ended."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any


def wait(check: Any, what: str, timeout: float = 600) -> Any:
    """``check()``'s first truthy value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what}: still waiting after {timeout}s")


def submit(client: Any, task: str, files: Mapping[str, str], *, run_id: str = "run-1") -> int:
    """A submission of ``files`` (path -> content) by model-a; its id."""
    response = client.post(
        "/api/v1/submissions/",
        {
            "task": task,
            "model": "model-a",
            "run_id": run_id,
            "files": [{"path": path, "content": content} for path, content in files.items()],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def graded(client: Any, pk: int, timeout: float = 120) -> dict[str, Any]:
    """The submission as the API shows it once its grading has ended."""

    def done() -> dict[str, Any] | None:
        body = client.get(f"/api/v1/submissions/{pk}/").json()
        return body if body["status"] in ("graded", "awaiting_review", "failed") else None

    return wait(done, f"submission {pk}", timeout)
