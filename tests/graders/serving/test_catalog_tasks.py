"""The catalog's serving tasks validate, one at a time (each grading measures what the
whole host can serve): the reference config sustains the task's first rate, the
expert's beats it with brackets apart, and each negative gets its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.catalog import check_bundles, format_table
from tests.test_catalog import serving_bundles

# A real engine under load measures the whole host: these run alone (see scripts/test.sh).
pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.mark.parametrize("folder", serving_bundles(), ids=lambda folder: folder.name)
@pytest.mark.timeout(1800)
def test_a_catalog_serving_task_validates(folder: Path, model_dir: Path) -> None:
    (check,) = check_bundles([folder], jobs=1)
    table = format_table([check])
    print(table)
    # Each graded file's reason too: a failing validation says why, not only that it failed.
    said = "\n".join(f"{f.role} {f.path}: {f.reason}" for f in check.files)
    assert check.passed, f"{table}\n{said}"
    solution = check.solution
    assert solution is not None and solution.verdict == "accepted", table
    assert (solution.metrics.get("rate_ratio") or solution.metrics.get("goodput_ratio") or 0) > 1
    if solution.headline.startswith("rate x"):
        # A rate search: the expert's climb went past the reference's, brackets apart.
        assert solution.reason.startswith("sustains about"), solution.reason
        assert f"x{solution.metrics['rate_ratio']:.3g} of the reference's" in solution.reason
    roles = {f.role for f in check.files}
    assert roles >= {"solution", "negative", "reference"}, roles
    negatives = [f for f in check.files if f.role == "negative"]
    assert {"compile_error"} < {f.expected for f in negatives}, "one invalid, one that fails"
    # Each negative's reason says what went wrong, in the grader's words.
    reasons = {f.path: f.reason for f in negatives}
    assert all(reasons.values()), reasons
    if folder.name == "serve-shared-prefix":
        assert "failed 100.0% of the requests" in reasons["bad/short-context.toml"], reasons
        # Its climb ended at the first rate: the reference's rest of the ladder could not
        # change the verdict.
        assert "the climb ended at 4 requests/s" in reasons["bad/short-context.toml"], reasons


def test_the_catalog_holds_serving_tasks() -> None:
    assert [f.name for f in serving_bundles()] != []
