"""A task kind that exists only in the tests: a text answer graded against a key.

It proves the seam between the platform and its graders: it is registered from
here, with no change anywhere else, and goes through the same paths as the
kinds that ship with the platform.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graders.contract import GradingTableError, Metric, RuleType, TaskKind


class TextAnswer(TaskKind):
    """A kind that exists only here: a text answer graded against a key."""

    name = "text-answer"
    label = "Text answer"
    metrics = (Metric("matched", "count", "higher", "1 when the answer matched the key"),)
    kind_rule_types = (RuleType("matched", "the answer matched the key"),)

    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        key = (manifest.get("grading") or {}).get("key")
        if key not in files:
            raise GradingTableError("grading.key", "must name a listed file")
        return key

    def default_grading(self) -> dict[str, Any]:
        return {"key": "key.txt"}

    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        key = message["task_files"][message["manifest"]["grading"]["key"]]
        answer = message["submission_files"].get("answer.txt", "")
        matched = answer.strip() == key.strip()
        return {
            "verdict": "accepted" if matched else "wrong_answer",
            "reason": f"the answer {answer!r}",  # quotes the solver's text as it came
            "operator_notes": f"key {key!r}",
        }

    def public_details(self, report: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def metric_values(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        return {"matched": 1.0 if report.get("verdict") == "accepted" else 0.0}

    def score_kind_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        if rule.get("type") != "matched":
            return super().score_kind_rule(rule, report=report, on_target=on_target)
        matched = report.get("verdict") == "accepted"
        return matched, "the answer matched the key" if matched else "the answer did not match"
