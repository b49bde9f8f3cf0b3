"""Reports recorded from real gradings, for tests of pages, APIs, exports and the CLI.

``manage.py record_reports`` grades catalog submissions in the real sandbox and
writes ``tests/fixtures/reports/<name>.json``: the task's slug, the files that
were submitted and the report exactly as a worker stores it. Tests take their
reports from here rather than writing dictionaries by hand, so a page that
breaks on what the grader really writes breaks its test. Re-record with
``manage.py record_reports`` when the report format changes.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "reports"


@functools.cache
def _load(name: str) -> dict[str, Any]:
    path = FIXTURES / f"{name}.json"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in FIXTURES.glob("*.json")))
        raise LookupError(f"no recorded grading {name!r} (recorded: {known})")
    return json.loads(path.read_text(encoding="utf-8"))


def names() -> list[str]:
    return sorted(path.stem for path in FIXTURES.glob("*.json"))


def report(name: str) -> dict[str, Any]:
    """The recorded report (a fresh copy: tests may change it)."""
    return copy.deepcopy(_load(name)["report"])


def files(name: str) -> dict[str, str]:
    """The files that were submitted for the recorded grading."""
    return dict(_load(name)["files"])


def task_slug(name: str) -> str:
    return str(_load(name)["task"])


# The recordings tests reach for most, by what they show.
ACCEPTED = "causal-softmax-solution"  # accepted, cpu_time, scored, significant speedup
ACCEPTED_SLOWER = "causal-softmax-reference-copy"  # accepted, speedup about 1, within noise
WRONG_ANSWER = "causal-softmax-no-tail"
INTEGRITY_VIOLATION = "causal-softmax-in-place"  # an input modified in place
INTERPRETER = "row-softmax-solution"  # accepted under Triton's interpreter: never scored
NEEDS_HARDWARE = "row-softmax-cuda-source"  # CUDA source on a host without a GPU
EMPTY = "causal-softmax-empty"  # an empty file: runtime_error
SYNTAX_ERROR = "causal-softmax-syntax-error"
TASK_ERROR = "causal-softmax-broken-reference"  # the task's reference raised: task_error
