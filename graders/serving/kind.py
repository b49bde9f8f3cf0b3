"""The serving task kind: its grading table, grading, report, metrics and rules.

Registered in ``graders.registry``. The grading itself is ``grading.py``; the
table, ``spec.py``; how pages show a report, ``reviews/serving.py``. Not there
yet (docs/architecture.md, "The serving grader"): two of the catalog's four
tasks, the GPU run. Its grading form is ``frontend/serving_forms.py``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from graders.contract import (
    GradingTableError,
    Metric,
    RuleType,
    TaskFileInfo,
    TaskKind,
    ValidationCandidate,
)
from graders.reports import report_number
from graders.verdicts import Verdict
from graders.worker import CannotGrade, message_files, ready_backend
from graders.worker import internal_report as _internal

from .spec import GRADING_KEYS, ServingSpec

# Must beat the reference with separated intervals, not only serve within the SLOs:
# what validation asks of the expert's config.
MUST_BEAT = "must_beat_reference"
# Validation of the reference config: it must meet the SLOs at the task's (first) rate,
# which is all it is graded at; a climb beyond would cost minutes and decide nothing.
FIRST_RATE_ONLY = "first_rate_only"
REFERENCE = "(reference config)"
# Everything of the table but the reference config's path: the author's is hidden.
PUBLIC_GRADING_KEYS = tuple(key for key in GRADING_KEYS if key != "reference")
PUBLIC_RESULT_KEYS = (
    "objective",
    "slo",
    "goodput_ratio",
    "goodput_ratio_ci",
    "rate_ratio",
    "rate_ratio_ci",
    "significant",
    "attainment",
    "config_errors",
    "phases_s",
    "semantics",
    "stopped",
)
PUBLIC_SIDE_KEYS = (
    "engine",
    "ready_s",
    "runs",
    "points",
    "max_rate",
    "max_rate_bracket",
    "error",
    "error_kind",
)


def _serving(report: Mapping[str, Any]) -> Mapping[str, Any]:
    value = report.get("serving")
    return value if isinstance(value, Mapping) else {}


def _side(report: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    value = _serving(report).get(role)
    return value if isinstance(value, Mapping) else {}


def _median_figure(side: Mapping[str, Any], key: str) -> float | None:
    runs = side.get("runs")
    if not isinstance(runs, list):
        return None
    values = sorted(
        float(run["figures"][key])
        for run in runs
        if isinstance(run, Mapping)
        and isinstance(run.get("figures"), Mapping)
        and isinstance(run["figures"].get(key), int | float)
    )
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _score(report: Mapping[str, Any]) -> tuple[str, float | None]:
    """The task's score: ("goodput", ratio) or, for a max_rate objective, ("rate", ratio)."""
    serving = _serving(report)
    if serving.get("objective") == "max_rate":
        return "rate", report_number(serving, "rate_ratio")
    return "goodput", report_number(serving, "goodput_ratio")


class ServingKind(TaskKind):
    name = "serving"
    label = "LLM serving"
    metrics = (
        Metric(
            "goodput_ratio",
            "x",
            "higher",
            "the submission's median goodput over the reference's, measured in one grading",
        ),
        Metric(
            "rate_ratio",
            "x",
            "higher",
            "max_rate tasks: the submission's highest rate within the SLOs over the reference's",
        ),
        Metric("max_rate", "", "higher", "max_rate tasks: the highest requests/s within the SLOs"),
        Metric("slo_attainment", "", "higher", "share of requests meeting every SLO (median run)"),
        Metric("goodput", "", "higher", "requests per second meeting every SLO (median run)"),
        Metric("p90_ttft_ms", "", "lower", "90th percentile time to first token (median run)"),
        Metric("p90_tpot_ms", "", "lower", "90th percentile time per output token (median run)"),
    )
    kind_rule_types: ClassVar[tuple[RuleType, ...]] = (
        RuleType(
            "goodput_ratio",
            "the submission's goodput is at least this multiple of the reference's",
            {"at_least": "the multiple wanted, above 0", "significant": "true: intervals separate"},
        ),
        RuleType(
            "rate_ratio",
            "max_rate tasks: the submission sustains at least this multiple of the reference's",
            {"at_least": "the multiple wanted, above 0", "significant": "true: brackets separate"},
        ),
        RuleType(
            "slo_attainment",
            "at least this share of requests meets every SLO",
            {"at_least": "the share wanted, above 0 and at most 1"},
        ),
        RuleType("valid_config", "the engine config passes every check and the engine starts"),
    )
    time_budget_s: ClassVar[float] = 1800.0
    authoring_form = "serving"

    # -- bundles ----------------------------------------------------------------------

    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        return ServingSpec.from_manifest(manifest, files)

    def check_draft_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> None:
        """As every kind's, but a reference config not written yet is the draft's file
        problem, not the table's: the table is checked as if the file held a config, and
        the bundle check names the missing file."""
        grading = manifest.get("grading")
        reference = grading.get("reference") if isinstance(grading, Mapping) else None
        if isinstance(reference, str) and reference.endswith(".toml") and reference not in files:
            files = {**files, reference: "# not written yet\nmax_num_seqs = 1\n"}
        super().check_draft_grading(manifest, files)

    def default_grading(self) -> dict[str, Any]:
        return {
            "submission": "engine.toml",
            "reference": "reference/engine.toml",
            "allowed": ["max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill"],
            "fixed": {"dtype": "bfloat16", "max_model_len": 2048, "enforce_eager": True},
            "model": {"tiny": {}},
            "workload": {"dataset": "random", "input_len": 256, "output_len": 32, "rate": 4},
            "slo": {"ttft_ms": 1000, "tpot_ms": 100, "attainment": 0.9},
        }

    def public_grading(
        self, grading: Mapping[str, Any], shown_paths: Collection[str]
    ) -> dict[str, Any]:
        """What a solver is measured by; never the reference config's path or flags."""
        return {key: grading[key] for key in PUBLIC_GRADING_KEYS if key in grading}

    def validation_candidates(
        self, manifest: Mapping[str, Any], files: Sequence[TaskFileInfo]
    ) -> list[ValidationCandidate]:
        """The expert's config, which must be accepted and beat the reference with
        separated intervals; each negative (an invalid config, one that misses the SLO
        or fails requests), with its expected verdict; and the reference config itself,
        which must serve the workload within the SLOs at the task's rate. Each is graded
        under the submission's file name."""
        texts = {f.path: f.text for f in files}
        try:
            spec = ServingSpec.from_manifest(manifest, texts)
            name, reference = spec.submission, spec.reference
        except GradingTableError:
            name, reference = "engine.toml", ""
        candidates = [
            ValidationCandidate(
                c.path,
                c.role,
                c.expected_verdict,
                {name: next(iter(c.submission_files.values()))},
                {MUST_BEAT: True} if c.role == "solution" else {},
            )
            for c in super().validation_candidates(manifest, files)
        ]
        if reference in texts:
            candidates.append(
                ValidationCandidate(
                    REFERENCE,
                    "reference",
                    Verdict.ACCEPTED.value,
                    {name: texts[reference]},
                    {FIRST_RATE_ONLY: True},
                )
            )
        return candidates

    # -- grading ----------------------------------------------------------------------

    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        from sandboxes.hardware import detect

        from .check import CheckUnavailable
        from .devices import grading_gpus
        from .engine import EngineError
        from .grading import grade_serving
        from .models import ModelBuildError, task_model

        started = time.monotonic()
        try:
            manifest, task_files, submission_files = message_files(message)
            spec = ServingSpec.from_manifest(manifest, task_files)
        except CannotGrade as error:
            return _internal(str(error))
        except GradingTableError as error:
            return _internal(f"the task's grading settings are invalid: {error}")
        overrides = message.get("overrides") or {}
        text = submission_files.get(spec.submission)
        if text is None:
            names = ", ".join(sorted(submission_files)) or "no files"
            return _report(
                Verdict.COMPILE_ERROR,
                f"no {spec.submission} in the submission ({names})",
                {},
                started,
            )
        try:
            config = spec.config_of(text, file=spec.submission)
        except GradingTableError as error:
            return _report(Verdict.COMPILE_ERROR, str(error), {}, started)
        reference = spec.config_of(task_files[spec.reference], file=spec.reference)
        gpus = grading_gpus(str(manifest.get("hardware", "cpu")), detect().get("gpu"))
        if isinstance(gpus, str):
            return _report(Verdict.NEEDS_HARDWARE, gpus, {}, started)
        if spec.model_path is not None and not Path(spec.model_path).is_dir():
            return _internal(f"the task's model {spec.model_path} is not on this grading host")
        if overrides.get(FIRST_RATE_ONLY) and spec.rates:
            spec = dataclasses.replace(spec, rates=spec.rates[:1])
        try:
            backend = ready_backend(backend_name)
            model_dir = task_model(spec)
            result = grade_serving(
                spec, reference, config, model_dir=model_dir, backend=backend, gpus=gpus
            )
        except (CannotGrade, CheckUnavailable, EngineError, ModelBuildError) as error:
            return _internal(str(error))
        verdict, reason = Verdict(result.verdict), result.reason
        name, ratio, interval = (
            ("rate", result.rate_ratio, result.rate_ratio_ci)
            if spec.objective == "max_rate"
            else ("goodput", result.goodput_ratio, result.goodput_ratio_ci)
        )
        beats = result.significant and (ratio or 0) > 1
        if overrides.get(MUST_BEAT) and verdict == Verdict.ACCEPTED and not beats:
            verdict = Verdict.WRONG_ANSWER
            reason = (
                f"serves within the SLOs but does not beat the reference with separated "
                f"intervals ({name} x{ratio}, interval {interval})"
            )
        return _report(verdict, reason, result.as_dict(), started)

    # -- reports ----------------------------------------------------------------------

    def public_details(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """The figures of both sides' runs and the score; never the reference's flags,
        nor the reference engine's log."""
        serving = _serving(report)
        shown = {key: serving[key] for key in PUBLIC_RESULT_KEYS if key in serving}
        for role in ("reference", "submission"):
            side = _side(report, role)
            shown[role] = {key: side[key] for key in PUBLIC_SIDE_KEYS if key in side}
        # vLLM's resolved settings of the reference engine would spell out its config.
        shown["reference"].pop("engine", None)
        submission = _side(report, "submission")
        shown["submission"]["flags"] = submission.get("flags", {})
        shown["submission"]["log"] = str(submission.get("log") or "")[-4000:]
        return shown

    def metric_values(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        serving = _serving(report)
        submission = _side(report, "submission")
        return {
            "goodput_ratio": report_number(serving, "goodput_ratio"),
            "rate_ratio": report_number(serving, "rate_ratio"),
            "max_rate": report_number(submission, "max_rate"),
            "slo_attainment": report_number(serving, "attainment"),
            "goodput": _median_figure(submission, "request_goodput"),
            "p90_ttft_ms": _median_figure(submission, "p90_ttft_ms"),
            "p90_tpot_ms": _median_figure(submission, "p90_tpot_ms"),
        }

    def summary_lines(self, report: Mapping[str, Any]) -> list[str]:
        values = self.metric_values(report)
        serving = _serving(report)
        name, ratio = _score(report)
        interval, significant = serving.get(f"{name}_ratio_ci"), serving.get("significant")
        lines = [
            f"{name + ':':<12} x{ratio} of the reference's "
            f"(interval {interval}, significant {significant})",
            f"SLOs met:    {values['slo_attainment']} of requests",
        ]
        if name == "rate":
            lines.insert(1, f"max rate:    {values['max_rate']} requests/s within the SLOs")
        if serving.get("stopped"):
            lines.append(f"stopped:     {serving['stopped']}")
        errors = serving.get("config_errors") or []
        lines += [f"config:      {error}" for error in errors[:10]]
        return lines

    def headline(self, report: Mapping[str, Any]) -> str:
        name, ratio = _score(report)
        return f"{name} x{ratio:.3g}" if ratio is not None else ""

    # -- rubrics ----------------------------------------------------------------------

    def check_kind_rule(self, rule: Mapping[str, Any]) -> list[tuple[str, str]]:
        kind, problems = rule.get("type"), []
        at_least = rule.get("at_least")
        if kind in ("goodput_ratio", "rate_ratio", "slo_attainment") and (
            isinstance(at_least, bool) or not isinstance(at_least, int | float) or at_least <= 0
        ):
            problems.append(("at_least", "must be a number above 0"))
        if kind == "slo_attainment" and isinstance(at_least, int | float) and at_least > 1:
            problems.append(("at_least", "is a share: at most 1"))
        if "significant" in rule and not isinstance(rule["significant"], bool):
            problems.append(("significant", "must be true or false"))
        return problems

    def score_kind_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        kind = rule.get("type")
        values = self.metric_values(report)
        if kind == "valid_config":
            verdict = report.get("verdict")
            ok = verdict not in (
                Verdict.COMPILE_ERROR.value,
                Verdict.INTERNAL_ERROR.value,
            ) and _side(report, "submission").get("error_kind") not in ("start", "memory")
            return ok, f"verdict {verdict}"
        if kind in ("goodput_ratio", "rate_ratio"):
            name = kind.removesuffix("_ratio")
            ratio, wanted = values[kind], float(rule.get("at_least", 1.0))
            significant = bool(_serving(report).get("significant"))
            ok = ratio is not None and ratio >= wanted
            if rule.get("significant"):
                ok = ok and significant
            return (
                ok,
                f"{name} x{ratio} (significant {significant}), rule wants at least x{wanted}",
            )
        if kind == "slo_attainment":
            share, wanted = values["slo_attainment"], float(rule.get("at_least", 0.9))
            return share is not None and share >= wanted, f"{share} met the SLOs, {wanted} wanted"
        return False, f"unknown rule type {kind!r} for serving tasks"


def _report(
    verdict: Verdict, reason: str, serving: Mapping[str, Any], started: float
) -> dict[str, Any]:
    return {
        "verdict": verdict.value,
        "reason": reason,
        "serving": dict(serving),
        "integrity": {
            "checks": ["engine flags through the platform's and vLLM's checks"],
            "violations": [],
        },
        "hardware": {"backend": "sandbox"},
        "logs": {},
        "duration_s": round(time.monotonic() - started, 3),
        "operator_notes": "",
    }
