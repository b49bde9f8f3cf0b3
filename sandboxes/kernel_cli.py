"""Grading from files on disk: what ``manage.py grade`` runs.

``grade_paths`` takes a reference (a bundle folder, or a bare KernelBench or
GPU MODE problem file) and a submission (a file, or a folder of files) and
always returns a report: a reference that cannot be read is the platform's
problem (``internal_error``), a submission that cannot be read is the
submission's (``runtime_error``). ``render`` turns a report into the text or
the single JSON object the command prints.
"""

from __future__ import annotations

import json
from pathlib import Path

from .base import Limits, Sandbox
from .kernel import grade
from .report import GradeReport, TimingResult, Verdict
from .spec import GradingSpec, SpecError

MAX_FILE_BYTES = 1024 * 1024


def load_reference(path: str | Path) -> GradingSpec:
    target = Path(path)
    if target.is_dir():
        return GradingSpec.from_bundle_dir(target)
    return GradingSpec.from_problem_file(target)


def load_submission(path: str | Path) -> dict[str, str]:
    """A file as itself, or every file under a folder by relative path."""
    target = Path(path)
    if target.is_file():
        return {target.name: target.read_text(encoding="utf-8")}
    if not target.is_dir():
        raise FileNotFoundError(f"{target} does not exist")
    files = {}
    for item in sorted(target.rglob("*")):
        relative = item.relative_to(target)
        if item.is_file() and not any(
            part.startswith(".") or part == "__pycache__" for part in relative.parts
        ):
            if item.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"{relative} is larger than {MAX_FILE_BYTES} bytes")
            files[relative.as_posix()] = item.read_text(encoding="utf-8")
    return files


def grade_paths(
    reference: str | Path,
    submission: str | Path,
    *,
    backend: Sandbox | None = None,
    limits: Limits | None = None,
    trials: int | None = None,
    hardware: str | None = None,
) -> GradeReport:
    try:
        spec = load_reference(reference)
    except (SpecError, OSError, UnicodeDecodeError) as exc:
        return GradeReport(Verdict.INTERNAL_ERROR, f"the reference cannot be used: {exc}")
    try:
        files = load_submission(submission)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return GradeReport(Verdict.RUNTIME_ERROR, f"the submission cannot be read: {exc}")
    if trials is not None and trials < 5:
        return GradeReport(Verdict.INTERNAL_ERROR, "--trials must be at least 5")
    if backend is None:
        from . import get_backend

        backend = get_backend("bwrap")
    try:
        return grade(
            spec,
            files,
            backend=backend,
            limits=limits or Limits(),
            hardware=hardware,
            trials=trials,
        )
    except Exception as exc:  # grade() never raises; the command still prints a report
        return GradeReport(
            Verdict.INTERNAL_ERROR, f"the grader failed: {type(exc).__name__}: {exc}"
        )


def render(report: GradeReport, *, as_json: bool) -> str:
    if as_json:
        return json.dumps(report.to_dict(), indent=2)
    lines = [f"verdict:     {report.verdict.value}", f"reason:      {report.reason}"]
    if report.correctness:
        passed = sum(trial.ok for trial in report.correctness)
        lines.append(
            f"correctness: {passed}/{len(report.correctness)} trials passed, "
            f"{report.checked_calls} calls checked"
        )
    if report.timing:
        lines.append(f"timing:      {_timing_line(report.timing)}")
    integrity = report.integrity
    found = "clean" if integrity.clean else "; ".join(integrity.violations)
    lines.append(f"integrity:   {len(integrity.checks)} checks, {found}")
    if report.hardware:
        lines.append(f"hardware:    {_hardware_line(report)}")
    lines.append(f"duration:    {report.duration_s:.1f} s")
    for stream in ("stdout", "stderr"):
        if report.logs.get(stream):
            lines.append(f"--- submission {stream} (tail) ---\n{report.logs[stream].rstrip()}")
    return "\n".join(lines)


def _timing_line(timing: TimingResult) -> str:
    note = "significant" if timing.significant else "not significant"
    if not timing.scored:
        note += ", not scored"
    low, high = timing.speedup_ci
    ref_ms, sub_ms = timing.reference.median_s * 1e3, timing.submission.median_s * 1e3
    return (
        f"{timing.timing_mode} on {timing.shape!r}: reference {ref_ms:.4g} ms, "
        f"submission {sub_ms:.4g} ms, speedup {timing.speedup:.3g}x "
        f"[{low:.3g}, {high:.3g}] ({note})"
    )


def _hardware_line(report: GradeReport) -> str:
    hw = report.hardware
    return (
        f"{hw.get('name')} ({hw.get('cpu_model')}), torch {hw.get('torch')}, "
        f"triton {hw.get('triton')}, sandbox {hw.get('sandbox')}, harness {report.harness_version}"
    )


def exit_code(report: GradeReport) -> int:
    return 0 if report.verdict == Verdict.ACCEPTED else 1
