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
)
from graders.reports import report_number
from graders.verdicts import Verdict
from graders.worker import CannotGrade, message_files, ready_backend
from graders.worker import internal_report as _internal

logger = logging.getLogger(__name__)

KEY_CHECK = "(key script)"
PUBLIC_FIELD_KEYS = ("name", "type", "points", "hit", "score", "message", "answer")
PUBLIC_RULE_KEYS = ("type", "points", "abs_tol", "rel_tol", "min_f1", "min_items")


def _score(report: Mapping[str, Any]) -> Mapping[str, Any]:
    score = report.get("score")
    return score if isinstance(score, Mapping) else {}


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
    )
    kind_rule_types: ClassVar[tuple[RuleType, ...]] = (
        RuleType("strict", "every scored field of the answer is right"),
        RuleType(
            "partial_score",
            "the answer earns at least this share of the fields' points",
            {"at_least": "the share wanted, above 0 and at most 1"},
        ),
        RuleType("field", "one named field of the answer is right", {"name": "the field"}),
    )
    time_budget_s = 600.0

    # -- bundles ----------------------------------------------------------------------

    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        from .spec import ProfilingSpec

        return ProfilingSpec.from_manifest(manifest, files)

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
        reproduce the stored key."""
        from .spec import ProfilingSpec

        try:
            spec = ProfilingSpec.from_manifest(manifest, {f.path: f.text for f in files})
            declared: Mapping[str, float] = spec.negative_scores
            answer_file = spec.answer_file
        except GradingTableError:
            declared, answer_file = {}, "answer.json"
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
        key_check = ValidationCandidate(
            KEY_CHECK, "reference", Verdict.ACCEPTED.value, {}, {"check_key": True}
        )
        return [*candidates, key_check]

    # -- grading ----------------------------------------------------------------------

    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        from .spec import ProfilingSpec

        try:
            manifest, task_files, submission_files = message_files(message)
        except CannotGrade as error:
            return _internal(str(error))
        overrides = message.get("overrides") or {}
        try:
            spec = ProfilingSpec.from_manifest(manifest, task_files)
        except GradingTableError as error:
            return _internal(f"the task's grading settings are invalid: {error}")
        from . import grading

        try:
            if overrides.get("check_key"):
                try:
                    backend = ready_backend(backend_name)
                except CannotGrade as error:
                    return _internal(str(error))
                report = grading.check_key(spec, task_files, backend)
            else:
                declared = overrides.get("declared_partial")
                report = grading.grade_answer(
                    spec,
                    submission_files,
                    declared_partial=float(declared) if isinstance(declared, int | float) else None,
                )
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
        value (``expected``)."""
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
        return {
            "strict_score": report_number(score, "strict"),
            "partial_score": report_number(score, "partial"),
            "fields_hit": report_number(score, "fields_hit"),
            "fields_total": report_number(score, "fields_total"),
        }

    def summary_lines(self, report: Mapping[str, Any]) -> list[str]:
        score = _score(report)
        lines = []
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
        return super().score_kind_rule(rule, report=report, on_target=on_target)
