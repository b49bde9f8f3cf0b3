"""The catalog validates: every bundle's expert solution is accepted and every negative
example gets the verdict it names, graded by the real grader in the real sandbox."""

from pathlib import Path

import pytest

from tasks.bundle import find_bundles, load_bundle
from tasks.catalog import check_bundles, format_table

CATALOG = Path(__file__).resolve().parent.parent / "reference_solutions"

pytestmark = pytest.mark.slow


def serving_bundles() -> list[Path]:
    """Serving bundles measure a whole host's throughput: they validate one at a time,
    in tests/graders/serving/test_catalog_tasks.py, not two at a time here."""
    folders, _ = find_bundles(CATALOG)
    return [f for f in folders if load_bundle(f).kind == "serving"]


@pytest.mark.timeout(3000)  # some eighty gradings, two at a time, beside the other test process
def test_every_catalog_bundle_validates():
    folders, skipped = find_bundles(CATALOG)
    assert skipped == []
    folders = [f for f in folders if f not in serving_bundles()]
    assert len(folders) >= 16

    checks = check_bundles(folders, jobs=2)

    table = format_table(checks)
    print(table)
    failed = [check.name for check in checks if not check.passed]
    assert failed == [], table
    cpu_speedups = [
        check.solution.metrics["speedup"]
        for check in checks
        if check.kind == "kernel" and check.hardware == "cpu" and check.solution is not None
    ]
    assert len(cpu_speedups) >= 3, "at least three CPU-target C++ tasks"
    assert all(speedup and speedup > 1.0 for speedup in cpu_speedups), table
