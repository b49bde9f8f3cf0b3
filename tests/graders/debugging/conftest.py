"""The debugging kind's tests share the catalog's softmax task as their base."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest

from graders.debugging.spec import DebugSpec
from tasks.bundle import Bundle, load_bundle

SOFTMAX = Path(__file__).resolve().parents[3] / "reference_solutions" / "debug-softmax-overflow"


@pytest.fixture(scope="session")
def softmax_bundle() -> Bundle:
    return load_bundle(SOFTMAX)


def bundle_parts(bundle: Bundle) -> tuple[dict[str, Any], dict[str, str]]:
    return bundle.manifest, {f.path: f.text for f in bundle.files}


@pytest.fixture(scope="session")
def softmax_spec(softmax_bundle: Bundle) -> DebugSpec:
    return DebugSpec.from_manifest(*bundle_parts(softmax_bundle))


def make_diff(path: str, before: str, after: str) -> str:
    """A unified diff of one file, the way ``git diff`` names its sides."""
    old = f"a/{path}" if before else "/dev/null"
    new = f"b/{path}" if after else "/dev/null"
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), old, new))
