"""Checking bundles on this host, without the database or the queue.

A bundle is valid when its expert solution is accepted and every negative
example gets the verdict it names. ``check_bundles`` grades them all with the
real sandbox and grader, several at a time, and ``format_table`` prints the
report ``manage.py validate_tasks`` shows.
"""

from __future__ import annotations

import multiprocessing
import posixpath
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders import registry
from graders.contract import TaskFileInfo, ValidationCandidate
from graders.verdicts import Verdict

from .bundle import Bundle, BundleInvalid, load_bundle

ACCEPTED = Verdict.ACCEPTED.value


@dataclass
class FileCheck:
    path: str
    role: str
    expected: str
    verdict: str = ""
    headline: str = ""  # the kind's main figure ("1.42x (cpu_time)" for a kernel)
    metrics: dict[str, float | None] = field(default_factory=dict)  # the kind's, by name
    reason: str = ""
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == self.expected


@dataclass
class BundleCheck:
    name: str
    slug: str = ""
    kind: str = ""
    hardware: str = ""
    error: str = ""  # the bundle itself is malformed
    files: list[FileCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.error and bool(self.files) and all(f.passed for f in self.files)

    @property
    def solution(self) -> FileCheck | None:
        return next((f for f in self.files if f.role == "solution"), None)


def _candidates(bundle: Bundle) -> list[ValidationCandidate]:
    """What validating the bundle grades, as its kind says (``validation_candidates``)."""
    files = [TaskFileInfo(f.path, f.role, f.expected_verdict or "", f.text) for f in bundle.files]
    return registry.get(bundle.kind).validation_candidates(bundle.manifest, files)


def _check(candidate: ValidationCandidate) -> FileCheck:
    return FileCheck(candidate.path, candidate.role, candidate.expected_verdict)


def bundle_message(
    bundle: Bundle, submission_files: dict[str, str], *, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The grading message a worker would get for ``submission_files`` on this bundle."""
    return {
        "manifest": bundle.manifest,
        "task_files": {f.path: f.text for f in bundle.files},
        "submission_files": submission_files,
        "overrides": dict(overrides or {}),
    }


def _grade_one(args: tuple[str, str, str | None]) -> FileCheck:
    """Grade one candidate file of one bundle (runs in a worker process), through the
    same entry point as a grading worker: the bundle's kind picks the grader."""
    folder, path, hardware = args
    from graders.worker import grade_message

    bundle = load_bundle(folder)
    candidate = next(c for c in _candidates(bundle) if c.path == path)
    check = _check(candidate)
    overrides = {**candidate.overrides, **({"hardware": hardware} if hardware else {})}
    message = bundle_message(bundle, dict(candidate.submission_files), overrides=overrides)
    report = grade_message(message, backend_name="bwrap")
    kind = registry.get(bundle.kind)
    check.verdict = str(report.get("verdict"))
    check.headline = kind.headline(report)
    check.metrics = kind.metrics_of(report)
    check.reason = str(report.get("reason") or "")
    duration = report.get("duration_s")
    check.duration_s = float(duration) if isinstance(duration, int | float) else 0.0
    return check


def check_bundles(
    folders: list[Path], *, jobs: int = 1, hardware: str | None = None
) -> list[BundleCheck]:
    """Grade every solution and negative of every bundle; ``jobs`` gradings at a time."""
    checks: list[BundleCheck] = []
    work: list[tuple[str, str, str | None]] = []
    for folder in folders:
        check = BundleCheck(name=folder.name)
        checks.append(check)
        try:
            bundle = load_bundle(folder)
        except BundleInvalid as error:
            check.error = str(error)
            continue
        check.slug, check.kind, check.hardware = bundle.slug, bundle.kind, bundle.hardware
        check.files = [_check(c) for c in _candidates(bundle)]
        work.extend((str(folder), f.path, hardware) for f in check.files)
    context = multiprocessing.get_context("spawn")  # no fork of a process holding torch threads
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        results = list(pool.map(_grade_one, work))
    by_key = {(folder, r.path): r for (folder, _, _), r in zip(work, results, strict=True)}
    for folder, check in zip(folders, checks, strict=True):
        check.files = [by_key.get((str(folder), f.path), f) for f in check.files]
    return checks


def format_table(checks: list[BundleCheck]) -> str:
    """task | solution verdict | the kind's figure | each negative: verdict vs expected."""
    rows = [("task", "solution", "figure", "negatives (got / expected)", "ok")]
    for check in checks:
        if check.error:
            rows.append((check.name, "invalid bundle", "", check.error.splitlines()[0], "FAIL"))
            continue
        solution = check.solution
        negatives = ", ".join(
            f"{posixpath.basename(f.path)}: {f.verdict}"
            + ("" if f.passed else f" (expected {f.expected})")
            for f in check.files
            if f.role != "solution"
        )
        rows.append(
            (
                check.slug,
                solution.verdict if solution else "(no solution)",
                (solution.headline or "-") if solution else "-",
                negatives or "(none)",
                "ok" if check.passed else "FAIL",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
