"""The order of a debugging grading's sandboxes: every sandbox whose output is public
(one running only visible tests) starts before any that holds a hidden test file, on
both sides, so that nothing a hidden test's sandbox leaves on the host has a public
reader later in the same grading. Graded for real, on the catalog task that has a
visible test with a memory budget (which runs in a sandbox of its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graders.debugging.grading import grade
from graders.debugging.spec import DebugSpec
from graders.files import read_bundle
from sandboxes import get_backend
from sandboxes.base import RunRequest

pytestmark = pytest.mark.slow

TASK = Path(__file__).resolve().parents[3] / "reference_solutions" / "debug-eval-memory-leak"


class Recording:
    """A sandbox backend that notes which test files each started sandbox holds."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.started: list[set[str]] = []

    def start(self, request: RunRequest) -> Any:
        self.started.append({path for path in request.files if "/tests/test_" in path})
        return self.backend.start(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


def test_every_public_sandbox_starts_before_any_holding_a_hidden_test():
    manifest, files = read_bundle(TASK)
    spec = DebugSpec.from_manifest(manifest, files)
    backend = Recording(get_backend("bwrap"))
    backend.check()

    report = grade(spec, files, {"fix.diff": files[spec.solution]}, backend)

    assert report["verdict"] == "accepted", report["reason"]
    hidden = {f"repo/{path}" for path in spec.tests if path not in spec.visible_tests}
    holds_hidden = [bool(paths & hidden) for paths in backend.started]
    per_side = len(holds_hidden) // 2
    assert per_side >= 3  # visible tests, the visible measured one, the hidden ones
    for side in (holds_hidden[:per_side], holds_hidden[per_side:]):
        first_hidden = side.index(True)
        assert not any(not h for h in side[first_hidden:]), side
        assert not any(side[:first_hidden]), side
