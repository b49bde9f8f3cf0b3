"""The debugging task kind: its grading table, validation, rules, metrics and public
report. The grading itself is in ``grading.py``; the fix rules in ``fix.py``."""

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
    tail,
)
from graders.reports import report_number
from graders.verdicts import Verdict
from graders.worker import CannotGrade, message_files, ready_backend
from graders.worker import internal_report as _internal

logger = logging.getLogger(__name__)

BASELINE = "(unchanged source)"
VALIDATION_REPEAT = 3  # the expert fix and the unchanged source: flaky tests show
MAX_REPEAT = 5
TEST_GROUPS = ("fail_to_pass", "pass_to_pass", "all")
PUBLIC_TEST_FIELDS = ("id", "group", "outcome", "message", "seconds", "output")


def _counts(report: Mapping[str, Any]) -> Mapping[str, Any]:
    counts = report.get("counts")
    return counts if isinstance(counts, Mapping) else {}


def _tests(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tests = report.get("tests")
    return [t for t in tests if isinstance(t, Mapping)] if isinstance(tests, list) else []


class DebuggingKind(TaskKind):
    name = "debugging"
    label = "Debugging"
    metrics = (
        Metric("resolved", "count", "higher", "1 when every FAIL_TO_PASS and PASS_TO_PASS passes"),
        Metric("fail_to_pass_passed", "count", "higher", "FAIL_TO_PASS tests the fix passes"),
        Metric("fail_to_pass_total", "count", "higher", "FAIL_TO_PASS tests of the task"),
        Metric("pass_to_pass_passed", "count", "higher", "PASS_TO_PASS tests the fix passes"),
        Metric("pass_to_pass_total", "count", "higher", "PASS_TO_PASS tests of the task"),
        Metric("lines_changed", "count", "lower", "lines the fix adds or removes"),
    )
    kind_rule_types: ClassVar[tuple[RuleType, ...]] = (
        RuleType("resolved", "every FAIL_TO_PASS test now passes and no PASS_TO_PASS test fails"),
        RuleType(
            "tests_passed",
            "at least this share of a group of tests passes",
            {
                "group": "fail_to_pass, pass_to_pass or all (default all)",
                "at_least": "the share wanted, 0 to 1 (default 1)",
            },
        ),
        RuleType(
            "lines_changed",
            "a resolved fix changes at most this many lines (added plus removed)",
            {"at_most": "the most lines"},
        ),
    )
    time_budget_s = 1800.0
    authoring_form = "debugging"

    # -- bundles ----------------------------------------------------------------------

    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        from .spec import DebugSpec

        return DebugSpec.from_manifest(manifest, files)

    def default_grading(self) -> dict[str, Any]:
        return {
            "root": "repo",
            "fail_to_pass": [],
            "pass_to_pass": [],
            "test_timeout_s": 60,
        }

    def public_grading(
        self, grading: Mapping[str, Any], shown_paths: Collection[str]
    ) -> dict[str, Any]:
        """The codebase's folder, the paths a fix may touch, the limits, and per group
        of tests how many there are and the ids of those in files solvers are shown
        (and those tests' memory budgets). A hidden test's id names it: never here."""
        public: dict[str, Any] = {}
        root = grading.get("root")
        if isinstance(root, str):
            public["root"] = root
        fix_paths = grading.get("fix_paths")
        if isinstance(fix_paths, list):
            public["fix_paths"] = [p for p in fix_paths if isinstance(p, str)]
        if isinstance(grading.get("test_timeout_s"), int | float):
            public["test_timeout_s"] = grading["test_timeout_s"]
        if isinstance(grading.get("network"), str):
            public["network"] = grading["network"]
        prefix = f"{root}/" if isinstance(root, str) else ""
        visible: list[str] = []
        for group in ("fail_to_pass", "pass_to_pass"):
            ids = grading.get(group)
            ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
            shown = [i for i in ids if prefix + i.partition("::")[0] in shown_paths]
            public[group] = {"total": len(ids), "visible": shown}
            visible += shown
        budgets = grading.get("peak_memory")
        if isinstance(budgets, Mapping):
            public["peak_memory"] = {k: v for k, v in scalars(budgets).items() if k in visible}
        tolerances = grading.get("tolerances")
        if isinstance(tolerances, Mapping):
            public["tolerances"] = {str(k): scalars(v) for k, v in tolerances.items()}
        if isinstance(grading.get("limits"), Mapping):
            public["limits"] = scalars(grading["limits"])
        return public

    def check_draft_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> None:
        """A draft's table alone: its keys and values; whether the tests it names exist is
        the bundle check's, once the files are written."""
        try:
            super().check_draft_grading(manifest, files)
        except GradingTableError as error:
            if error.field in ("grading.fail_to_pass", "grading.pass_to_pass") and (
                "is not a test file" in error.message or "has no top-level" in error.message
            ):
                return
            raise

    def validation_candidates(
        self, manifest: Mapping[str, Any], files: Sequence[TaskFileInfo]
    ) -> list[ValidationCandidate]:
        """The expert fix (run three times on fresh seeds: a test whose outcome changes
        is flaky), the negatives, and the unchanged source, which must fail every
        FAIL_TO_PASS test and pass every PASS_TO_PASS test (three times too)."""
        candidates = [
            ValidationCandidate(
                c.path,
                c.role,
                c.expected_verdict,
                c.submission_files,
                {"repeat": VALIDATION_REPEAT} if c.role == "solution" else {},
            )
            for c in super().validation_candidates(manifest, files)
        ]
        baseline = ValidationCandidate(
            BASELINE,
            "starter",
            Verdict.WRONG_ANSWER.value,
            {},
            {"baseline": True, "repeat": VALIDATION_REPEAT},
        )
        return [*candidates, baseline]

    # -- grading ----------------------------------------------------------------------

    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        from .spec import DebugSpec

        try:
            manifest, task_files, submission_files = message_files(message)
        except CannotGrade as error:
            return _internal(str(error))
        overrides = message.get("overrides") or {}
        repeat = overrides.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
            return _internal(f"repeat must be a whole number from 1 to {MAX_REPEAT}")
        try:
            spec = DebugSpec.from_manifest(manifest, task_files)
        except GradingTableError as error:
            return _internal(f"the task's grading settings are invalid: {error}")
        try:
            backend = ready_backend(backend_name)
        except CannotGrade as error:
            return _internal(str(error))
        from .grading import grade

        try:
            report = grade(
                spec,
                task_files,
                submission_files,
                backend,
                baseline=bool(overrides.get("baseline")),
                repeat=repeat,
            )
        except Exception as error:  # grade() never raises; this is the last line of defence
            logger.exception("debugging grading raised")
            return _internal(f"the grader failed: {type(error).__name__}")
        return _with_integrity(report)

    # -- reports ----------------------------------------------------------------------

    def public_details(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """Counts for every test; names, messages and output for the visible ones only.
        A hidden test is never named, and its outcome counts only by kind."""
        tests = _tests(report)
        hidden: dict[str, int] = {}
        for test in tests:
            if not test.get("visible"):
                outcome = str(test.get("outcome"))
                hidden[outcome] = hidden.get(outcome, 0) + 1
        counts = _counts(report)
        return {
            "counts": {
                key: counts[key]
                for key in (
                    "fail_to_pass_passed",
                    "fail_to_pass_total",
                    "pass_to_pass_passed",
                    "pass_to_pass_total",
                    "resolved",
                )
                if key in counts
            },
            "visible_tests": [
                {
                    key: (tail(test.get(key), 4000) if key == "output" else test.get(key))
                    for key in PUBLIC_TEST_FIELDS
                }
                for test in tests
                if test.get("visible")
            ],
            "hidden_outcomes": hidden,
            "lines_changed": report.get("lines_changed"),
            "changed_files": [str(path) for path in report.get("changed_files") or []][:200],
            "diff": tail(report.get("diff"), 200_000),
        }

    def metric_values(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        counts = _counts(report)
        resolved = counts.get("resolved")
        return {
            "resolved": (1.0 if resolved else 0.0) if isinstance(resolved, bool) else None,
            **{
                key: report_number(counts, key)
                for key in (
                    "fail_to_pass_passed",
                    "fail_to_pass_total",
                    "pass_to_pass_passed",
                    "pass_to_pass_total",
                )
            },
            "lines_changed": report_number(report, "lines_changed"),
        }

    def summary_lines(self, report: Mapping[str, Any]) -> list[str]:
        counts = _counts(report)
        lines = []
        if counts:
            lines.append(
                f"tests:       FAIL_TO_PASS {counts.get('fail_to_pass_passed')}/"
                f"{counts.get('fail_to_pass_total')}, PASS_TO_PASS "
                f"{counts.get('pass_to_pass_passed')}/{counts.get('pass_to_pass_total')}"
                f"{', resolved' if counts.get('resolved') else ''}"
            )
        for test in _tests(report):
            mark = "ok  " if test.get("outcome") == "passed" else "FAIL"
            lines.append(
                f"  {mark} {test.get('id')} [{test.get('group')}] {test.get('outcome')}"
                f" {test.get('seconds')} s {tail(test.get('message'), 200)}".rstrip()
            )
        if report.get("lines_changed") is not None:
            lines.append(f"fix:         {report.get('lines_changed')} lines changed")
        return lines

    def headline(self, report: Mapping[str, Any]) -> str:
        counts = _counts(report)
        if not counts:
            return ""
        passed = int(counts.get("fail_to_pass_passed", 0)) + int(
            counts.get("pass_to_pass_passed", 0)
        )
        total = int(counts.get("fail_to_pass_total", 0)) + int(counts.get("pass_to_pass_total", 0))
        return f"{passed}/{total} tests"

    # -- rubrics ----------------------------------------------------------------------

    def check_kind_rule(self, rule: Mapping[str, Any]) -> list[tuple[str, str]]:
        kind = rule.get("type")
        problems: list[tuple[str, str]] = []
        if kind == "tests_passed":
            if rule.get("group", "all") not in TEST_GROUPS:
                problems.append(("group", f"must be one of {', '.join(TEST_GROUPS)}"))
            share = rule.get("at_least", 1)
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
                problems.append(("at_least", "must be a share above 0 and at most 1"))
        elif kind == "lines_changed":
            most = rule.get("at_most")
            if isinstance(most, bool) or not isinstance(most, int) or most < 1:
                problems.append(("at_most", "must be a whole number of lines, at least 1"))
        return problems

    def score_kind_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        kind = rule.get("type")
        counts = _counts(report)
        if kind == "resolved":
            resolved = report.get("verdict") == Verdict.ACCEPTED and counts.get("resolved") is True
            return resolved, "resolved" if resolved else "not resolved"
        if kind == "tests_passed":
            group = str(rule.get("group", "all"))
            groups = ("fail_to_pass", "pass_to_pass") if group == "all" else (group,)
            passed = sum(int(counts.get(f"{g}_passed", 0)) for g in groups)
            total = sum(int(counts.get(f"{g}_total", 0)) for g in groups)
            share = float(rule.get("at_least", 1))
            if total == 0:
                return False, "no tests ran"
            return (
                passed / total >= share,
                f"{passed}/{total} {group} tests pass, rule wants {share:.0%}",
            )
        if kind == "lines_changed":
            most = int(rule.get("at_most", 0))
            lines = report.get("lines_changed")
            if report.get("verdict") != Verdict.ACCEPTED or not isinstance(lines, int):
                return False, "counts only for a resolved fix"
            return lines <= most, f"{lines} lines changed, rule wants at most {most}"
        return super().score_kind_rule(rule, report=report, on_target=on_target)


def _with_integrity(report: dict[str, Any]) -> dict[str, Any]:
    """The fields every report has, filled in: a refused fix is an integrity finding."""
    violations = (
        [str(report.get("reason"))]
        if report.get("verdict") == Verdict.INTEGRITY_VIOLATION.value
        else []
    )
    checks = ["fix paths checked", "tests judged outside the tested process"]
    report.setdefault("integrity", {"checks": checks, "violations": violations})
    report.setdefault("logs", {})
    report.setdefault("operator_notes", "")
    return report
