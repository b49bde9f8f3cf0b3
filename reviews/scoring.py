"""The arithmetic of reviews: one review's points, and how several reviews combine.

Plain functions over plain values, so every rule is tested on its own.

A review's total is ``rubrics.services.rubric_total``: points achieved over the
positive points available, penalties (negative criteria) subtracting, clipped to
[0, 1]. A submission's score is the mean of its reviews' totals; the spread
(max - min) and the standard deviation are kept beside it.

Decisions combine by this rule:

- every review accepts -> ``accepted``;
- some review rejects and none accepts -> ``rejected``;
- every review says needs_fix -> ``needs_fix``;
- otherwise (an accept beside a reject or a needs_fix) the reviewers disagree,
  and so they do when their totals differ by more than the task's threshold:
  the submission goes to adjudication.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .models import Decision, OutcomeDecision

RULE_UNANIMOUS_ACCEPT = "every review accepts"
RULE_REJECT = "a review rejects and none accepts"
RULE_NEEDS_FIX = "every review asks for a fix"
RULE_DISAGREE = "an accept beside a reject or needs-fix decision"
RULE_ADJUDICATED = "decided by a senior reviewer"
# Floating-point slack so a spread equal to the threshold never counts as beyond it.
_EPSILON = 1e-9


def flipped_points(*, criterion_points: int, met: bool) -> float:
    """An overturned automatic criterion: the rule's outcome is taken as the opposite."""
    return 0.0 if met else float(criterion_points)


def combine_decisions(decisions: Sequence[str]) -> tuple[str | None, str]:
    """The combined decision and the rule that gave it; ``None`` when they disagree."""
    held = set(decisions)
    if not held:
        return None, "no reviews"
    if held == {Decision.ACCEPT}:
        return OutcomeDecision.ACCEPTED, RULE_UNANIMOUS_ACCEPT
    if Decision.REJECT in held and Decision.ACCEPT not in held:
        return OutcomeDecision.REJECTED, RULE_REJECT
    if held == {Decision.NEEDS_FIX}:
        return OutcomeDecision.NEEDS_FIX, RULE_NEEDS_FIX
    return None, RULE_DISAGREE


@dataclass(frozen=True)
class Consensus:
    decision: str | None  # None: the reviewers disagree; adjudication decides
    rule: str
    score: float | None
    spread: float | None
    stdev: float | None


def consensus(decisions: Sequence[str], totals: Sequence[float], threshold: float) -> Consensus:
    """Combine several reviews of one submission (see the module docstring)."""
    if not totals:
        return Consensus(None, "no reviews", None, None, None)
    mean = sum(totals) / len(totals)
    spread = max(totals) - min(totals)
    stdev = math.sqrt(sum((t - mean) ** 2 for t in totals) / len(totals))
    decision, rule = combine_decisions(decisions)
    if decision is not None and spread > threshold + _EPSILON:
        decision = None
        rule = f"rubric totals differ by {spread:.2f}, more than {threshold:.2f}"
    return Consensus(decision, rule, mean, spread, stdev)
