"""The kernel task kind: its grading table, rules, metrics and public report."""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

from graders.contract import (
    GradingTableError,
    Metric,
    RuleType,
    TaskKind,
    pick,
    scalars,
)
from graders.reports import report_number
from graders.verdicts import Verdict

logger = logging.getLogger(__name__)

# Top-level task.toml keys: a grading error about one of them is not under [grading].
MANIFEST_KEYS = ("slug", "title", "kind", "hardware", "files", "statement", "grading")

# What a solver may see of a report's timing and trials (allow-lists).
TIMING_STATS = ("median_s", "spread", "count", "calls", "ci_low_s", "ci_high_s")
TIMING_FIELDS = (
    "timing_mode",
    "method",
    "shape",
    "speedup",
    "speedup_ci",
    "significant",
    "scored",
    "unscored_reason",
    "calls_per_batch",
)
# Never a trial's seed or message: a reference's own check may print expected values.
TRIAL_FIELDS = ("shape", "trial", "ok", "max_abs_error", "max_rel_error", "shapes", "dtypes")
MAX_TRIALS = 200
# The trace summary (``graders.kernel.profile``): a side's figures and its operators'.
PROFILE_SIDE_FIELDS = (
    "distinct_operators",
    "cpu_us_per_call",
    "outside_us_per_call",
    "ops_per_call",
    "launches_per_call",
    "note",
)
PROFILE_OPERATOR_FIELDS = ("name", "count", "self_cpu_us", "self_cuda_us", "total_cpu_us")

_FIELD_PREFIX = re.compile(
    r"^([A-Za-z_][\w-]*(?:\[\d+\])*(?:\.[\w-]+(?:\[\d+\])*)*):\s+(.+)$", re.DOTALL
)


# A KernelBench module with everything a grading check needs, used only to check the
# [grading] table of a draft that has no reference yet.
_PLACEHOLDER_REFERENCE = (
    "class Model:\n    pass\n\n\ndef get_inputs():\n    return []\n\n\n"
    "def get_init_inputs():\n    return []\n"
)


def worker_hardware() -> str | None:
    """This worker's hardware class, from BENCHWRIGHT_WORKER_HARDWARE (set per GPU
    worker), else detected by the grader."""
    return os.environ.get("BENCHWRIGHT_WORKER_HARDWARE") or None


def _timing_line(timing: Mapping[str, Any]) -> str:
    note = "significant" if timing.get("significant") else "not significant"
    if timing.get("scored") is False:
        note += ", not scored"
    interval = timing.get("speedup_ci")
    bounds = list(interval)[:2] if isinstance(interval, list | tuple) else []
    low, high = (
        float(b) if isinstance(b, int | float) else math.nan for b in [*bounds, None, None][:2]
    )
    ref_ms = (report_number(timing, "reference", "median_s") or math.nan) * 1e3
    sub_ms = (report_number(timing, "submission", "median_s") or math.nan) * 1e3
    speedup = report_number(timing, "speedup") or math.nan
    return (
        f"{timing.get('timing_mode')} on {timing.get('shape')!r}: reference {ref_ms:.4g} ms, "
        f"submission {sub_ms:.4g} ms, speedup {speedup:.3g}x [{low:.3g}, {high:.3g}] ({note})"
    )


def _public_profile(profile: Any) -> dict[str, Any] | None:
    """The trace summary a solver may see: the operators of their own code, and the
    reference's only where the task shows its reference (else they would tell what a
    hidden file does)."""
    if not isinstance(profile, Mapping):
        return None
    public: dict[str, Any] = pick(profile, ("calls", "device"))
    shown = ("reference", "submission") if profile.get("reference_public") is True else ()
    for side in shown or ("submission",):
        figures = profile.get(side)
        if not isinstance(figures, Mapping):
            continue
        operators = figures.get("operators")
        public[side] = {
            **pick(figures, PROFILE_SIDE_FIELDS),
            "operators": [
                pick(op, PROFILE_OPERATOR_FIELDS)
                for op in (operators if isinstance(operators, list) else [])[:50]
            ],
        }
    return public


def _internal(reason: str) -> dict[str, Any]:
    from graders.kernel.report import GradeReport

    return GradeReport(verdict=Verdict.INTERNAL_ERROR, reason=reason).to_dict()


class KernelKind(TaskKind):
    name = "kernel"
    label = "GPU kernel"
    authoring_form = "kernel"
    metrics = (
        Metric(
            "speedup",
            "x",
            "higher",
            "the reference's time per call over the submission's, on the timing shape set",
        ),
        Metric("reference_median_s", "s", "lower", "the reference's time per call"),
        Metric("submission_median_s", "s", "lower", "the submission's time per call"),
        Metric(
            "checked_calls", "count", "higher", "calls whose output was compared with the reference"
        ),
    )
    kind_rule_types: ClassVar[tuple[RuleType, ...]] = (
        RuleType(
            "speedup",
            "an accepted submission, timed on the task's own hardware with a scored timing, is "
            "significantly faster than the reference by at least this factor",
            {"at_least": "the speedup wanted (default 1.0)"},
        ),
    )

    # -- bundles ----------------------------------------------------------------------

    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        from graders.kernel.spec import GradingSpec

        try:
            return GradingSpec.from_manifest(manifest, files)
        except ValueError as exc:
            raise self._table_error(exc, manifest) from None

    @staticmethod
    def _table_error(exc: ValueError, manifest: Mapping[str, Any]) -> GradingTableError:
        """The spec's error, its field path made relative to task.toml (an error about
        the reference's source names that file)."""
        message = str(exc)
        field = getattr(exc, "field", None)
        if isinstance(field, str) and field:
            message = message.removeprefix(f"{field}: ")
        elif match := _FIELD_PREFIX.match(message):
            field, message = match[1], match[2]
        else:
            return GradingTableError("grading", message)
        head = re.split(r"[.\[]", field, maxsplit=1)[0]
        if head == "reference":
            reference = next(
                (
                    entry.get("path")
                    for entry in manifest.get("files") or []
                    if isinstance(entry, Mapping) and entry.get("role") == "reference"
                ),
                None,
            )
            if isinstance(reference, str):
                return GradingTableError("", message, file=reference)
        if head not in MANIFEST_KEYS and head not in manifest:
            field = f"grading.{field}"  # a path relative to [grading]
        return GradingTableError(field, message)

    def default_grading(self) -> dict[str, Any]:
        return {"format": "kernelbench", "language": "pytorch", "trials": 5}

    def public_grading(
        self, grading: Mapping[str, Any], shown_paths: Collection[str]
    ) -> dict[str, Any]:
        """Shape sets give their names (and the hosts they run on) but not their sizes
        or value ranges: those are the test, and an author who wants solvers to know
        them says so in the statement."""
        public: dict[str, Any] = {
            key: grading[key] for key in ("format", "language") if isinstance(grading.get(key), str)
        }
        if isinstance(grading.get("trials"), int):
            public["trials"] = grading["trials"]
        shapes = grading.get("shapes")
        if isinstance(shapes, list):
            public["shapes"] = []
            for i, shape_set in enumerate(s for s in shapes if isinstance(s, Mapping)):
                entry: dict[str, Any] = {"name": str(shape_set.get("name", f"set-{i + 1}"))}
                if isinstance(shape_set.get("hosts"), list):
                    entry["hosts"] = [str(h) for h in shape_set["hosts"]]
                public["shapes"].append(entry)
        tolerances = grading.get("tolerances")
        if isinstance(tolerances, Mapping):
            public["tolerances"] = {str(k): scalars(v) for k, v in tolerances.items()}
        for key in ("timing", "limits"):
            if isinstance(grading.get(key), Mapping):
                public[key] = scalars(grading[key])
        return public

    def check_draft_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> None:
        """A draft with no usable reference yet has its table checked against a
        placeholder KernelBench module; one whose reference does not parse is left to
        the bundle check, which reports it on that file."""
        entries = [e for e in manifest.get("files") or [] if isinstance(e, Mapping)]
        references = [e.get("path") for e in entries if e.get("role") == "reference"]
        if len(references) != 1 or not str(references[0]).endswith(".py"):
            placeholder = {"path": "reference.py", "role": "reference", "visibility": "hidden"}
            manifest = {**manifest, "files": [placeholder]}
            files = {"reference.py": _PLACEHOLDER_REFERENCE}
        try:
            super().check_draft_grading(manifest, files)
        except SyntaxError:
            return

    # -- grading ----------------------------------------------------------------------

    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        from graders.kernel.spec import MIN_TRIALS, GradingSpec, SpecError
        from graders.worker import CannotGrade, message_files, ready_backend
        from sandboxes.base import Limits

        try:
            manifest, task_files, submission_files = message_files(message)
        except CannotGrade as error:
            return _internal(str(error))
        try:
            spec = GradingSpec.from_manifest(manifest, task_files)
        except SpecError as error:
            return _internal(f"the task's grading settings are invalid: {error}")
        try:
            backend = ready_backend(backend_name)
        except CannotGrade as error:
            return _internal(str(error))
        from graders.kernel.grading import grade  # imports torch: only for a sound message

        overrides = message.get("overrides") or {}
        trials = overrides.get("trials")
        if trials is not None and (not isinstance(trials, int) or trials < MIN_TRIALS):
            return _internal(f"trials must be a whole number of at least {MIN_TRIALS}")
        try:
            report = grade(
                spec,
                submission_files,
                backend=backend,
                limits=Limits(),
                hardware=overrides.get("hardware") or worker_hardware(),
                trials=trials,
            )
        except Exception as error:  # grade() never raises; this is the last line of defence
            logger.exception("grading raised")
            return _internal(f"the grader failed: {type(error).__name__}")
        return report.to_dict()

    # -- reports ----------------------------------------------------------------------

    def public_details(self, report: Mapping[str, Any]) -> dict[str, Any]:
        timing = report.get("timing")
        public_timing = None
        if isinstance(timing, Mapping):
            public_timing = pick(timing, TIMING_FIELDS)
            for side in ("reference", "submission"):
                public_timing[side] = pick(timing.get(side), TIMING_STATS)
        trials = report.get("correctness")
        trials = trials if isinstance(trials, list) else []
        return {
            "speedup": report.get("speedup"),
            "timing_mode": report.get("timing_mode"),
            "correctness": [pick(trial, TRIAL_FIELDS) for trial in trials[:MAX_TRIALS]],
            "timing": public_timing,
            "harness_version": str(report.get("harness_version") or ""),
            "checked_calls": report.get("checked_calls"),
            "profile": _public_profile(report.get("profile")),
        }

    def metric_values(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        return {
            "speedup": report_number(report, "speedup"),
            "reference_median_s": report_number(report, "timing", "reference", "median_s"),
            "submission_median_s": report_number(report, "timing", "submission", "median_s"),
            "checked_calls": report_number(report, "checked_calls"),
        }

    def summary_lines(self, report: Mapping[str, Any]) -> list[str]:
        lines = []
        trials = report.get("correctness")
        if isinstance(trials, list) and trials:
            passed = sum(bool(isinstance(t, Mapping) and t.get("ok")) for t in trials)
            lines.append(
                f"correctness: {passed}/{len(trials)} trials passed, "
                f"{report.get('checked_calls')} calls checked"
            )
        timing = report.get("timing")
        if isinstance(timing, Mapping):
            lines.append(f"timing:      {_timing_line(timing)}")
        hw = report.get("hardware")
        if isinstance(hw, Mapping) and hw:
            lines.append(
                f"hardware:    {hw.get('name')} ({hw.get('cpu_model')}), torch {hw.get('torch')}, "
                f"triton {hw.get('triton')}, sandbox {hw.get('sandbox')}, "
                f"harness {report.get('harness_version')}"
            )
        return lines

    def headline(self, report: Mapping[str, Any]) -> str:
        speedup = report_number(report, "speedup")
        if speedup is None:
            return ""
        return f"{speedup:.2f}x ({report.get('timing_mode') or 'untimed'})"

    def problem_file_task(self, path: Path) -> tuple[dict[str, Any], dict[str, str]]:
        from graders.kernel.spec import problem_file_task

        return problem_file_task(path)

    # -- rubrics ----------------------------------------------------------------------

    def check_kind_rule(self, rule: Mapping[str, Any]) -> list[tuple[str, str]]:
        at_least = rule.get("at_least")
        if isinstance(at_least, bool) or not isinstance(at_least, int | float) or at_least <= 0:
            return [("at_least", "must be a number above 0")]
        return []

    def score_kind_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        if rule.get("type") != "speedup":
            return super().score_kind_rule(rule, report=report, on_target=on_target)
        threshold = float(rule.get("at_least", 1.0))
        if report.get("verdict") != Verdict.ACCEPTED:
            return False, "speedup counts only for accepted submissions"
        if not on_target:
            return False, "not graded on the task's target hardware: speedup not scored"
        timing = report.get("timing") or {}
        if report.get("timing_mode") == "interpreter" or timing.get("scored") is False:
            why = timing.get("unscored_reason") or "timed under the Triton interpreter"
            return False, f"speedup not scored: {why}"
        speedup = report.get("speedup")
        if not isinstance(speedup, int | float):
            return False, "no speedup measured"
        if not timing.get("significant", False):
            return False, f"speedup {speedup:.2f}x is within timing noise"
        return speedup >= threshold, f"speedup {speedup:.2f}x, rule wants {threshold:g}x"
