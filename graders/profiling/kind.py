"""The profiling task kind: its grading table, validation, rules, metrics and public
report. Scoring is in ``scoring.py``, the grading itself in ``grading.py``, the
trace library in ``trace.py`` and ``analysis.py``."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

from graders.contract import (
    GradingTableError,
    Metric,
    RuleType,
    TaskFileInfo,
    TaskKind,
    ValidationCandidate,
    scalars,
)
from graders.reports import report_number
from graders.verdicts import Verdict
from graders.worker import CannotGrade, message_files, ready_backend
from graders.worker import internal_report as _internal

logger = logging.getLogger(__name__)

KEY_CHECK = "(key script)"
ORIGINAL = "(original program)"
PUBLIC_FIELD_KEYS = ("name", "type", "points", "hit", "score", "message", "answer")
PUBLIC_RULE_KEYS = ("type", "points", "abs_tol", "rel_tol", "min_f1", "min_items")
PUBLIC_FIX_KEYS = (
    "program",
    "entry",
    "signal",
    "steps",
    "warmup",
    "repeats",
    "max_ratio",
    "timeout_s",
)
PUBLIC_SIDE_KEYS = (
    "signal_per_step",
    "signal_per_call",
    "signal_outside_steps",
    "syncs_per_step",
    "launches_per_step",
    "step_times_s",
    "top_operators",
)
PUBLIC_TIMING_KEYS = ("method", "ratio", "ratio_ci", "pairs", "significant", "profiled_ratio")


def _score(report: Mapping[str, Any]) -> Mapping[str, Any]:
    score = report.get("score")
    return score if isinstance(score, Mapping) else {}


def _fix(report: Mapping[str, Any]) -> Mapping[str, Any]:
    fix = report.get("reprofile")
    return fix if isinstance(fix, Mapping) else {}


def _side(fix: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    side = fix.get(role)
    return side if isinstance(side, Mapping) else {}


def _mean(values: Any) -> float | None:
    if not isinstance(values, list) or not values:
        return None
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return round(sum(numbers) / len(numbers), 4) if len(numbers) == len(values) else None


def _signal(side: Mapping[str, Any]) -> float | None:
    """A side's signal: per call over its whole run (syncs, launches), or the mean of
    its step windows (step time)."""
    per_call = side.get("signal_per_call")
    if isinstance(per_call, int | float) and not isinstance(per_call, bool):
        return round(float(per_call), 4)
    return _mean(side.get("signal_per_step"))


def _public_fix(report: Mapping[str, Any]) -> dict[str, Any]:
    fix = _fix(report)
    sides = {}
    for role in ("reference", "submission"):
        side = _side(fix, role)
        shown = {k: side[k] for k in PUBLIC_SIDE_KEYS if k in side}
        if role == "submission":
            shown |= {
                k: side[k] for k in ("error", "error_kind", "traceback", "output") if k in side
            }
        sides[role] = shown
    timing = fix.get("timing") if isinstance(fix.get("timing"), Mapping) else None
    return {
        "signal": report.get("signal"),
        "max_ratio": report.get("max_ratio"),
        "signal_ratio": fix.get("signal_ratio"),
        "significant": fix.get("significant"),
        "outputs_match": fix.get("outputs_match"),
        "mismatch": fix.get("mismatch"),
        "timing": {k: v for k, v in timing.items() if k in PUBLIC_TIMING_KEYS} if timing else None,
        **sides,
    }


def _parse(manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
    """The settings of either form: a ``FixTask`` or a ``ProfilingSpec``."""
    from .fix_task import FixTask
    from .spec import ProfilingSpec

    grading = manifest.get("grading")
    if isinstance(grading, Mapping) and grading.get("form") == "reprofile":
        return FixTask.from_manifest(manifest, files)
    return ProfilingSpec.from_manifest(manifest, files)


def _fields(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    fields = report.get("fields")
    return [f for f in fields if isinstance(f, Mapping)] if isinstance(fields, list) else []


class ProfilingKind(TaskKind):
    name = "profiling"
    label = "Profiling"
    metrics = (
        Metric("strict_score", "", "higher", "1 when every scored field of the answer is right"),
        Metric("partial_score", "", "higher", "the share of the answer's points earned, 0 to 1"),
        Metric("fields_hit", "count", "higher", "scored fields answered right"),
        Metric("fields_total", "count", "higher", "scored fields of the task"),
        Metric(
            "signal_ratio",
            "x",
            "lower",
            "re-profile: the changed program's planted signal over the original's",
        ),
        Metric("reference_signal", "", "lower", "re-profile: the original program's signal"),
        Metric("submission_signal", "", "lower", "re-profile: the changed program's signal"),
    )
    kind_rule_types: ClassVar[tuple[RuleType, ...]] = (
        RuleType("strict", "every scored field of the answer is right"),
        RuleType(
            "partial_score",
            "the answer earns at least this share of the fields' points",
            {"at_least": "the share wanted, above 0 and at most 1"},
        ),
        RuleType("field", "one named field of the answer is right", {"name": "the field"}),
        RuleType(
            "signal_ratio",
            "re-profile: the changed program keeps at most this share of the planted signal",
            {"at_most": "the share, above 0"},
        ),
    )
    time_budget_s = 600.0
    # The [grading] table is nested (fields, traces, key): edited as TOML in the editor.
    authoring_form = "table"

    # -- bundles ----------------------------------------------------------------------

    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        return _parse(manifest, files)

    def default_grading(self) -> dict[str, Any]:
        return {
            "form": "answer",
            "traces": [],
            "schema": "answer.schema.json",
            "key": "key.json",
            "key_script": "derive_key.py",
            "fields": {},
        }

    def public_grading(
        self, grading: Mapping[str, Any], shown_paths: Collection[str]
    ) -> dict[str, Any]:
        """The form, the traces and schema solvers are shown, the answer's file name, and
        how each field is matched (its type, points and tolerance): never the aliases
        or required items, which are part of the answer."""
        public: dict[str, Any] = {}
        if isinstance(grading.get("form"), str):
            public["form"] = grading["form"]
        if grading.get("form") == "reprofile":
            public |= {k: grading[k] for k in PUBLIC_FIX_KEYS if k in grading}
            if grading.get("inputs") in shown_paths:
                public["inputs"] = grading["inputs"]
            if isinstance(grading.get("tolerances"), Mapping):
                public["tolerances"] = {
                    str(k): scalars(v) for k, v in grading["tolerances"].items()
                }
            return public
        traces = grading.get("traces")
        if isinstance(traces, list):
            public["traces"] = [t for t in traces if isinstance(t, str) and t in shown_paths]
        for key in ("schema", "answer_file"):
            if isinstance(grading.get(key), str) and (
                key != "schema" or grading[key] in shown_paths
            ):
                public[key] = grading[key]
        fields = grading.get("fields")
        if isinstance(fields, Mapping):
            public["fields"] = {
                str(name): {k: rule[k] for k in PUBLIC_RULE_KEYS if k in rule}
                for name, rule in fields.items()
                if isinstance(rule, Mapping)
            }
        return public

    def answer_paths(self, grading: Mapping[str, Any], roles: Mapping[str, str]) -> frozenset[str]:
        """The key and the answers of the expert and the negatives: a right answer
        states the key's values, laid out as any JSON writer lays them out."""
        paths = {path for path, role in roles.items() if role in ("solution", "negative")}
        if isinstance(grading.get("key"), str):
            paths.add(grading["key"])
        return frozenset(paths)

    def validation_candidates(
        self, manifest: Mapping[str, Any], files: Sequence[TaskFileInfo]
    ) -> list[ValidationCandidate]:
        """The expert answer (which must score full), each negative (which must earn
        the partial score the table declares for it), and the key script, which must
        reproduce the stored key. For a re-profile task: the expert fix (accepted),
        the negatives, and the original program, which must fail the signal check."""
        from .fix_task import FixTask
        from .spec import ProfilingSpec

        texts = {f.path: f.text for f in files}
        declared: Mapping[str, float] = {}
        program = ""
        try:
            if (manifest.get("grading") or {}).get("form") == "reprofile":
                fix_task = FixTask.from_manifest(manifest, texts)
                answer_file, program = fix_task.file_name, fix_task.program
            else:
                spec = ProfilingSpec.from_manifest(manifest, texts)
                declared, answer_file = spec.negative_scores, spec.answer_file
        except GradingTableError:
            answer_file = "answer.json"
        candidates = [
            ValidationCandidate(
                c.path,
                c.role,
                c.expected_verdict,
                {answer_file: next(iter(c.submission_files.values()))},
                {"declared_partial": declared[c.path]} if c.path in declared else {},
            )
            for c in super().validation_candidates(manifest, files)
        ]
        if (manifest.get("grading") or {}).get("form") == "reprofile":
            # The original program, submitted unchanged, must fail the signal check.
            original = next((f for f in files if f.path == program), None)
            if original is not None:
                candidates.append(
                    ValidationCandidate(
                        ORIGINAL,
                        "reference",
                        Verdict.WRONG_ANSWER.value,
                        {answer_file: original.text},
                    )
                )
            return candidates
        key_check = ValidationCandidate(
            KEY_CHECK, "reference", Verdict.ACCEPTED.value, {}, {"check_key": True}
        )
        return [*candidates, key_check]

    # -- grading ----------------------------------------------------------------------

    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        from sandboxes.base import SandboxError

        try:
            manifest, task_files, submission_files = message_files(message)
        except CannotGrade as error:
            return _internal(str(error))
        overrides = message.get("overrides") or {}
        try:
            spec = _parse(manifest, task_files)
        except GradingTableError as error:
            return _internal(f"the task's grading settings are invalid: {error}")
        from . import grading
        from .fix_task import FixTask, grade_fix

        try:
            if isinstance(spec, FixTask) or overrides.get("check_key"):
                try:
                    backend = ready_backend(backend_name)
                except CannotGrade as error:
                    return _internal(str(error))
            if isinstance(spec, FixTask):
                report = grade_fix(spec, task_files, submission_files, backend)
            elif overrides.get("check_key"):
                report = grading.check_key(spec, task_files, backend)
            else:
                declared = overrides.get("declared_partial")
                report = grading.grade_answer(
                    spec,
                    submission_files,
                    declared_partial=float(declared) if isinstance(declared, int | float) else None,
                )
        except SandboxError as error:
            return _internal(f"the sandbox failed: {error}")
        except Exception as error:  # grading never raises; this is the last line of defence
            logger.exception("profiling grading raised")
            return _internal(f"the grader failed: {type(error).__name__}")
        report.setdefault(
            "integrity", {"checks": ["answer scored on the trusted side"], "violations": []}
        )
        report.setdefault("logs", {})
        return report

    # -- reports ----------------------------------------------------------------------

    def public_details(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """The scores, and per field whether it hit, its score and why: never the key's
        value (``expected``). Of a re-profiling: the signal on both sides, the
        operators the changed program called most, its error; never the secret seed
        nor what the original program printed."""
        if report.get("form") == "reprofile":
            return _public_fix(report)
        return {
            "answer_valid": report.get("answer_valid"),
            "answer_error": str(report.get("answer_error") or ""),
            "score": {
                key: _score(report)[key]
                for key in (
                    "strict",
                    "partial",
                    "points",
                    "points_total",
                    "fields_hit",
                    "fields_total",
                )
                if key in _score(report)
            },
            "fields": [{k: f.get(k) for k in PUBLIC_FIELD_KEYS} for f in _fields(report)],
            "texts": {
                str(k): str(v)[:20_000]
                for k, v in (report.get("texts") or {}).items()
                if isinstance(report.get("texts"), Mapping)
            },
        }

    def metric_values(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        score = _score(report)
        fix = _fix(report)
        return {
            "signal_ratio": report_number(fix, "signal_ratio"),
            "reference_signal": _signal(_side(fix, "reference")),
            "submission_signal": _signal(_side(fix, "submission")),
            "strict_score": report_number(score, "strict"),
            "partial_score": report_number(score, "partial"),
            "fields_hit": report_number(score, "fields_hit"),
            "fields_total": report_number(score, "fields_total"),
        }

    def summary_lines(self, report: Mapping[str, Any]) -> list[str]:
        score = _score(report)
        lines = []
        fix = _fix(report)
        if fix:
            values = self.metric_values(report)
            lines.append(
                f"signal:      {report.get('signal')}: {values['reference_signal']}"
                f" -> {values['submission_signal']} (ratio {values['signal_ratio']},"
                f" at most {report.get('max_ratio')} wanted)"
            )
        if report.get("answer_error"):
            lines.append(f"answer:      invalid: {report.get('answer_error')}")
        if score:
            lines.append(
                f"score:       strict {score.get('strict')}, partial {score.get('partial')}"
                f" ({score.get('points')}/{score.get('points_total')} points)"
            )
        for field in _fields(report):
            mark = "ok  " if field.get("hit") else "MISS"
            lines.append(
                f"  {mark} {field.get('name')} [{field.get('type')}] {field.get('score')}:"
                f" {field.get('message')}"
            )
        return lines

    def headline(self, report: Mapping[str, Any]) -> str:
        ratio = report_number(_fix(report), "signal_ratio")
        if ratio is not None:
            return f"{report.get('signal')} x{ratio:.3g}"
        score = _score(report)
        if not score:
            return ""
        return (
            f"{score.get('fields_hit')}/{score.get('fields_total')} fields, {score.get('partial')}"
        )

    # -- rubrics ----------------------------------------------------------------------

    def check_kind_rule(self, rule: Mapping[str, Any]) -> list[tuple[str, str]]:
        kind = rule.get("type")
        if kind == "partial_score":
            share = rule.get("at_least")
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
                return [("at_least", "must be a share above 0 and at most 1")]
        if kind == "field" and (not isinstance(rule.get("name"), str) or not rule.get("name")):
            return [("name", "must name a field of the answer")]
        if kind == "signal_ratio":
            share = rule.get("at_most")
            if isinstance(share, bool) or not isinstance(share, int | float) or not share > 0:
                return [("at_most", "must be a share above 0")]
        return []

    def score_kind_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        kind = rule.get("type")
        score = _score(report)
        if kind == "strict":
            strict = score.get("strict") == 1.0
            return strict, "every field right" if strict else "not every field right"
        if kind == "partial_score":
            partial = score.get("partial")
            wanted = float(rule.get("at_least", 1))
            if not isinstance(partial, int | float):
                return False, "no score"
            return partial >= wanted, f"partial score {partial:g}, rule wants {wanted:g}"
        if kind == "field":
            name = rule.get("name")
            for field in _fields(report):
                if field.get("name") == name:
                    return bool(field.get("hit")), f"{name}: {field.get('message')}"
            return False, f"the report has no field {name!r}"
        if kind == "signal_ratio":
            ratio = report_number(_fix(report), "signal_ratio")
            wanted = float(rule.get("at_most", 1))
            if ratio is None:
                return False, "the signal was not measured"
            return ratio <= wanted, f"signal ratio {ratio:.3g}, rule wants at most {wanted:g}"
        return super().score_kind_rule(rule, report=report, on_target=on_target)
