"""Scoring: automatic criteria from a grading's report, and rubric totals.

A rubric scores what it is given (a report, its task kind, whether it ran on the
task's hardware); it never loads submissions or their grading runs, which come
later in the flow and store the scores themselves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from graders import registry

from .models import Criterion, CriterionKind, Rubric


def rule_holds(
    rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool, kind: str
) -> tuple[bool, str]:
    """Whether an automatic rule holds for a report of a ``kind`` task, and why (shown
    to reviewers): the kind scores its own rule types (``TaskKind.score_rule``)."""
    return registry.get(kind).score_rule(rule, report=report, on_target=on_target)


@dataclass(frozen=True)
class AutomaticScore:
    """One automatic criterion scored from a report."""

    criterion: Criterion
    met: bool
    points: float
    detail: str  # why, for reviewers


def score_automatic(
    rubric: Rubric | None, *, report: Mapping[str, Any], kind: str, on_target: bool
) -> list[AutomaticScore]:
    """Score every automatic criterion of ``rubric`` (a task version's) from a report
    of a ``kind`` task; ``on_target``: the grading ran on the task's own hardware."""
    if rubric is None:
        return []
    scores = []
    for criterion in rubric.criteria.filter(kind=CriterionKind.AUTOMATIC):
        met, detail = rule_holds(criterion.rule, report=report, on_target=on_target, kind=kind)
        points = float(criterion.points) if met else 0.0
        scores.append(AutomaticScore(criterion, met, points, detail))
    return scores


def rubric_total(criteria: Iterable[Criterion], awarded: Mapping[str, float]) -> float:
    """Points achieved over positive points available; penalties subtract; clipped to [0, 1]."""
    criteria = list(criteria)
    available = sum(c.points for c in criteria if c.points > 0)
    if available <= 0:
        return 0.0
    achieved = sum(awarded.get(c.key, 0.0) for c in criteria)
    return min(1.0, max(0.0, achieved / available))
