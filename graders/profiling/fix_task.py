"""The re-profile form of a profiling task: its grading table and its grading.

The bundle holds a small PyTorch program with a planted problem (``program``,
shown to solvers) and the module that makes its inputs from a seed
(``inputs``, usually hidden). A submission is the changed program, under the
program's file name. ``reprofile.py`` runs both under ``torch.profiler`` in
sandboxes of their own; this module turns what it measured into a verdict:

- ``accepted``: the outputs match the original program's on secret inputs and
  the planted signal dropped, significantly, to at most ``max_ratio`` of the
  original's (per call over the whole run for syncs and launches, per step for
  step time);
- ``wrong_answer``: the outputs differ, or the signal did not drop enough;
- ``integrity_violation``: the program tampered with the profiler (a missing
  step or canary, a replaced profiler function or ``Tensor.item``);
- the usual error verdicts for a program that raises, hangs or runs out of
  memory; ``task_error`` when the original program itself fails.

Every error is a ``GradingTableError`` naming the file and the field.
"""

from __future__ import annotations

import math
import posixpath
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graders.contract import GradingTableError
from graders.verdicts import Verdict

from .reprofile import SIGNALS, ProgramSpec, Reprofile, reprofile

GRADING_KEYS = (
    "form",
    "program",
    "entry",
    "inputs",
    "signal",
    "steps",
    "warmup",
    "repeats",
    "max_ratio",
    "tolerances",
    "timeout_s",
)
DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
MAX_STEPS = 50
# What a side's error means for the submission's verdict.
ERROR_VERDICTS = {
    "raised": Verdict.RUNTIME_ERROR,
    "crashed": Verdict.RUNTIME_ERROR,
    "exited": Verdict.RUNTIME_ERROR,
    "garbled": Verdict.RUNTIME_ERROR,
    "refused": Verdict.RUNTIME_ERROR,
    "timeout": Verdict.TIME_LIMIT_EXCEEDED,
    "memory": Verdict.MEMORY_LIMIT_EXCEEDED,
    "output_limit": Verdict.OUTPUT_LIMIT_EXCEEDED,
}
SIGNAL_WORDS = {
    "syncs": "host syncs per call",
    "launches": "operator launches per call",
    "step_time": "step time",
}


@dataclass(frozen=True)
class FixTask:
    """A re-profile task's settings."""

    program: str  # the bundle path of the original program
    inputs: str  # the bundle path of the inputs module
    spec: ProgramSpec
    max_ratio: float
    timeout_s: float

    @property
    def file_name(self) -> str:
        """The name a submission's program goes under (and the program's in the sandbox)."""
        return posixpath.basename(self.program)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], files: Mapping[str, str]) -> FixTask:
        from graders.debugging.spec import parse_tolerances

        grading = manifest.get("grading")
        if not isinstance(grading, Mapping):
            raise GradingTableError("grading", "a profiling task needs a [grading] table")
        unknown = sorted(set(grading) - set(GRADING_KEYS))
        if unknown:
            raise GradingTableError(
                f"grading.{unknown[0]}",
                f"unknown key for the reprofile form; known: {', '.join(GRADING_KEYS)}",
            )
        entries = {
            str(e.get("path")): e
            for e in manifest.get("files") or []
            if isinstance(e, Mapping) and isinstance(e.get("path"), str)
        }
        program = _python_file(grading, "program", entries, files)
        if entries[program].get("visibility") != "prompt":
            raise GradingTableError("grading.program", f"{program} must be shown to solvers")
        inputs = _python_file(grading, "inputs", entries, files)
        if posixpath.basename(inputs) == posixpath.basename(program):
            raise GradingTableError("grading.inputs", "must have another file name than program")
        entry = grading.get("entry", "step")
        if not isinstance(entry, str) or not entry.isidentifier():
            raise GradingTableError("grading.entry", "must be the name of a Python function")
        signal = grading.get("signal")
        if signal not in SIGNALS:
            raise GradingTableError("grading.signal", f"must be one of: {', '.join(SIGNALS)}")
        steps = _whole(grading, "steps", 3, low=1, high=MAX_STEPS)
        warmup = _whole(grading, "warmup", 1, low=0, high=MAX_STEPS)
        repeats = _whole(grading, "repeats", 5, low=3, high=MAX_STEPS)
        max_ratio = grading.get("max_ratio")
        if (
            isinstance(max_ratio, bool)
            or not isinstance(max_ratio, int | float)
            or not 0 < max_ratio < 1
        ):
            raise GradingTableError(
                "grading.max_ratio",
                "is required: the share of the original's signal a fix may keep, above 0 "
                "and below 1",
            )
        timeout = grading.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise GradingTableError("grading.timeout_s", "must be a number of seconds")
        if not 0 < timeout <= MAX_TIMEOUT_S:
            raise GradingTableError("grading.timeout_s", f"must lie in (0, {MAX_TIMEOUT_S:g}]")
        hardware = manifest.get("hardware", "cpu")
        spec = ProgramSpec(
            module=posixpath.basename(program),
            entry=entry,
            inputs_module=posixpath.basename(inputs),
            steps=steps,
            warmup=warmup,
            signal=signal,
            repeats=repeats,
            tolerances=parse_tolerances(grading),
            cuda=hardware != "cpu",
        )
        return cls(program, inputs, spec, float(max_ratio), float(timeout))


def _python_file(
    grading: Mapping[str, Any],
    name: str,
    entries: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str],
) -> str:
    path = grading.get(name)
    where = f"grading.{name}"
    if not isinstance(path, str) or not path.endswith(".py"):
        raise GradingTableError(where, "is required: a Python file of the bundle")
    if path not in entries or path not in files:
        raise GradingTableError(where, f"{path} is not a file of the bundle")
    return path


def _whole(grading: Mapping[str, Any], name: str, default: int, *, low: int, high: int) -> int:
    value = grading.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise GradingTableError(f"grading.{name}", f"must be a whole number in [{low}, {high}]")
    return value


# -- grading ------------------------------------------------------------------------------


def grade_fix(
    task: FixTask,
    task_files: Mapping[str, str],
    submission_files: Mapping[str, str],
    backend: Any,
    *,
    seed: int | None = None,
) -> dict[str, Any]:
    """Re-profile the submission against the task's program; the report."""
    started = time.monotonic()
    program = submission_files.get(task.file_name)
    if program is None:
        names = ", ".join(sorted(submission_files)) or "no files"
        return _report(
            task,
            Verdict.WRONG_ANSWER,
            f"no {task.file_name} in the submission (it has {names})",
            None,
            started,
        )
    result = reprofile(
        task.spec,
        {task.file_name: task_files[task.program]},
        {task.file_name: program},
        {task.spec.inputs_module: task_files[task.inputs]},
        backend,
        seed=seed,
        timeout_s=task.timeout_s,
    )
    verdict, reason = verdict_of(task, result)
    return _report(task, verdict, reason, result, started)


def verdict_of(task: FixTask, result: Reprofile) -> tuple[Verdict, str]:
    outcome = result.outcome
    words = SIGNAL_WORDS[task.spec.signal]
    if outcome == "task_problem":
        return Verdict.TASK_ERROR, result.task_problem
    if outcome == "integrity_violation":
        return Verdict.INTEGRITY_VIOLATION, "; ".join(result.integrity)
    if outcome in ERROR_VERDICTS:
        side = result.submission
        return ERROR_VERDICTS[outcome], f"the program failed ({outcome}): {side.error}"
    if outcome == "wrong_answer":
        return Verdict.WRONG_ANSWER, (
            f"its results differ from the original program's: {result.mismatch}"
        )
    ratio = result.signal_ratio
    figure = f"{words}: {ratio:.3g} times the original's" if math.isfinite(ratio) else words
    if outcome == "improved" and ratio <= task.max_ratio:
        return Verdict.ACCEPTED, f"same results; {figure} (at most {task.max_ratio:g} wanted)"
    if outcome == "improved":
        return Verdict.WRONG_ANSWER, (
            f"same results, but {figure}: not down to {task.max_ratio:g} times the original's"
        )
    return Verdict.WRONG_ANSWER, f"same results, but {figure}: no significant drop"


def _report(
    task: FixTask, verdict: Verdict, reason: str, result: Reprofile | None, started: float
) -> dict[str, Any]:
    data = result.as_dict() if result is not None else None
    return {
        "kind": "profiling",
        "form": "reprofile",
        "verdict": verdict.value,
        "reason": reason,
        "signal": task.spec.signal,
        "max_ratio": task.max_ratio,
        "reprofile": data,
        "integrity": {
            "checks": [
                "every profiled step and its canary present in the trace",
                "profiler functions and Tensor.item unchanged",
                "outputs of plain tensors and containers only",
            ],
            "violations": list(result.integrity) if result is not None else [],
        },
        "hardware": {"name": "cuda" if task.spec.cuda else "cpu"},
        "logs": {"submission": result.submission.output if result is not None else ""},
        "duration_s": round(time.monotonic() - started, 3),
        "operator_notes": f"secret seed {result.seed}" if result is not None else "",
    }
