"""The validation table's figures come from what the grader really reports."""

from __future__ import annotations

import pytest

from frontend.selectors import validation_row
from tasks.models import ValidationResult
from tests import recorded


def test_a_negative_that_fails_in_a_timed_call_shows_its_error() -> None:
    # Correct on every trial, wrong once timed: the table must not read "0 / 0".
    report = recorded.report("masked-mean-pool-stale")
    assert all(t["ok"] for t in report["correctness"][:-1])

    row = validation_row(ValidationResult(path="bad/stale_after_warmup.py", report=report))

    assert row.max_abs_error == pytest.approx(report["correctness"][-1]["max_abs_error"])
    assert row.max_abs_error is not None and row.max_abs_error > 0.1
    assert "timed batch" in report["correctness"][-1]["message"]
