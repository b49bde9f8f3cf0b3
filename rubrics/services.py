"""Scoring: automatic criteria from a grading run, and rubric totals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .models import Criterion, CriterionKind, CriterionScore, ScoreSource

if TYPE_CHECKING:
    from submissions.models import GradingRun


def rule_holds(
    rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
) -> tuple[bool, str]:
    """Whether an automatic rule holds for a report, and why (shown to reviewers)."""
    kind = rule.get("type")
    verdict = report.get("verdict")
    if kind == "verdict":
        expected = rule.get("equals", "accepted")
        return verdict == expected, f"verdict {verdict}, rule wants {expected}"
    if kind == "integrity":
        violations = (report.get("integrity") or {}).get("violations") or []
        want_clean = bool(rule.get("clean", True))
        if want_clean and verdict != "accepted":
            # A run that failed was never checked through: "no findings" earns nothing.
            return False, f"verdict {verdict}: a clean record counts only for accepted submissions"
        return (not violations) == want_clean, f"{len(violations)} integrity finding(s)"
    if kind == "speedup":
        return _speedup_holds(rule, report=report, on_target=on_target)
    return False, f"unknown rule type {kind!r}"


def _speedup_holds(
    rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
) -> tuple[bool, str]:
    threshold = float(rule.get("at_least", 1.0))
    if report.get("verdict") != "accepted":
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


def score_automatic(*, grading_run: GradingRun) -> list[CriterionScore]:
    """Score every automatic criterion of the submission's pinned rubric."""
    version = grading_run.submission.task_version
    rubric = getattr(version, "rubric", None)
    if rubric is None:
        return []
    scores = []
    for criterion in rubric.criteria.filter(kind=CriterionKind.AUTOMATIC):
        met, detail = rule_holds(
            criterion.rule, report=grading_run.report, on_target=grading_run.target_hardware
        )
        scores.append(
            CriterionScore(
                submission=grading_run.submission,
                criterion=criterion,
                grading_run=grading_run,
                source=ScoreSource.AUTOMATIC,
                points=float(criterion.points) if met else 0.0,
                met=met,
                detail=detail,
            )
        )
    return CriterionScore.objects.bulk_create(scores)


def rubric_total(criteria: Iterable[Criterion], awarded: Mapping[str, float]) -> float:
    """Points achieved over positive points available; penalties subtract; clipped to [0, 1]."""
    criteria = list(criteria)
    available = sum(c.points for c in criteria if c.points > 0)
    if available <= 0:
        return 0.0
    achieved = sum(awarded.get(c.key, 0.0) for c in criteria)
    return min(1.0, max(0.0, achieved / available))
