"""Scoring: automatic criteria from a grading run, and rubric totals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from graders import registry

from .models import Criterion, CriterionKind, CriterionScore, ScoreSource

if TYPE_CHECKING:
    from submissions.models import GradingRun


def rule_holds(
    rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool, kind: str
) -> tuple[bool, str]:
    """Whether an automatic rule holds for a report of a ``kind`` task, and why (shown
    to reviewers): the kind scores its own rule types (``TaskKind.score_rule``)."""
    return registry.get(kind).score_rule(rule, report=report, on_target=on_target)


def score_automatic(*, grading_run: GradingRun) -> list[CriterionScore]:
    """Score every automatic criterion of the submission's pinned rubric."""
    version = grading_run.submission.task_version
    rubric = getattr(version, "rubric", None)
    if rubric is None:
        return []
    scores = []
    for criterion in rubric.criteria.filter(kind=CriterionKind.AUTOMATIC):
        met, detail = rule_holds(
            criterion.rule,
            report=grading_run.report,
            on_target=grading_run.target_hardware,
            kind=version.kind,
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
