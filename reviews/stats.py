"""Figures for the reviewer dashboard and the admin overview: throughput,
agreement (``reviews.agreement``) and how often reviewers overturn the grader.

A unit of agreement is one submission as graded by one grading run (a regrade
is a new unit): for decisions, the unit's values are its reviewers' decisions;
for scores, each human criterion of the unit is a unit whose values are the
levels its reviewers chose.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from itertools import combinations
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from rubrics.models import CriterionKind
from tasks.models import Task

from . import agreement
from .models import (
    AssignmentStatus,
    OutcomeDecision,
    OutcomeStatus,
    Review,
    ReviewAssignment,
    ReviewOutcome,
    ReviewScore,
)

THROUGHPUT_DAYS = 14
MIN_SHARED_FOR_KAPPA = 2
# A review's decision agrees with the final outcome when it maps onto it.
DECISION_OUTCOME = {
    "accept": OutcomeDecision.ACCEPTED,
    "reject": OutcomeDecision.REJECTED,
    "needs_fix": OutcomeDecision.NEEDS_FIX,
}

Unit = tuple[int, int]  # (submission, grading run)


def throughput(reviewer: User | None = None, days: int = THROUGHPUT_DAYS) -> list[tuple[date, int]]:
    """Reviews per day over the last ``days`` days (UTC), oldest first, zeros included."""
    today = timezone.now().date()
    start = today - timedelta(days=days - 1)
    reviews = Review.objects.filter(created_at__date__gte=start)
    if reviewer is not None:
        reviews = reviews.filter(reviewer=reviewer)
    counts = dict(
        reviews.annotate(day=TruncDate("created_at"))
        .values_list("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    return [
        (start + timedelta(days=i), counts.get(start + timedelta(days=i), 0)) for i in range(days)
    ]


def decision_units(reviews: QuerySet[Review]) -> dict[Unit, dict[int, str]]:
    units: dict[Unit, dict[int, str]] = defaultdict(dict)
    for submission_id, run_id, reviewer_id, decision in reviews.values_list(
        "submission_id", "grading_run_id", "reviewer_id", "decision"
    ):
        units[(submission_id, run_id)][reviewer_id] = decision
    return units


def score_units(reviews: QuerySet[Review]) -> dict[tuple[int, int, str], dict[int, float]]:
    units: dict[tuple[int, int, str], dict[int, float]] = defaultdict(dict)
    rows = ReviewScore.objects.filter(review__in=reviews, criterion__kind=CriterionKind.HUMAN)
    for submission_id, run_id, key, reviewer_id, points in rows.values_list(
        "review__submission_id",
        "review__grading_run_id",
        "criterion__key",
        "review__reviewer_id",
        "points",
    ):
        units[(submission_id, run_id, key)][reviewer_id] = points
    return units


def reliability(reviews: QuerySet[Review]) -> dict[str, Any]:
    """Krippendorff's alpha over these reviews: interval and ordinal over human
    criterion levels, nominal over decisions; with how many units could pair."""
    decisions = decision_units(reviews)
    scores = score_units(reviews)
    decision_values = [list(u.values()) for u in decisions.values()]
    score_values = [list(u.values()) for u in scores.values()]
    return {
        "decision_alpha": agreement.krippendorff_alpha(decision_values, agreement.NOMINAL),
        "score_alpha_interval": agreement.krippendorff_alpha(score_values, agreement.INTERVAL),
        "score_alpha_ordinal": agreement.krippendorff_alpha(score_values, agreement.ORDINAL),
        "units": sum(1 for u in decision_values if len(u) >= 2),
    }


def kappa_pairs(reviews: QuerySet[Review]) -> list[dict[str, Any]]:
    """Cohen's kappa on decisions for every pair of reviewers who share enough items."""
    shared: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
    for unit in decision_units(reviews).values():
        for first, second in combinations(sorted(unit), 2):
            shared[(first, second)].append((unit[first], unit[second]))
    names = dict(
        User.objects.filter(pk__in={p for pair in shared for p in pair}).values_list(
            "pk", "username"
        )
    )
    return [
        {
            "reviewers": (names.get(a, str(a)), names.get(b, str(b))),
            "shared": len(pairs),
            "kappa": agreement.cohen_kappa(pairs),
        }
        for (a, b), pairs in sorted(shared.items())
        if len(pairs) >= MIN_SHARED_FOR_KAPPA
    ]


def overturn_rate(rows: QuerySet[ReviewScore]) -> dict[str, Any]:
    """How often reviewers overturned the grader on automatic criteria."""
    automatic = rows.filter(criterion__kind=CriterionKind.AUTOMATIC)
    counts = automatic.aggregate(
        total=Count("pk"), overturned=Count("pk", filter=Q(overturned=True))
    )
    total = counts["total"] or 0
    return {
        "checked": total,
        "overturned": counts["overturned"] or 0,
        "rate": (counts["overturned"] / total) if total else None,
    }


def agreement_with_consensus(reviewer: User) -> dict[str, Any]:
    """How the reviewer's reviews compare with final outcomes that combined several
    reviews (or were adjudicated): the share of matching decisions and the mean
    absolute difference between their total and the final score."""
    reviews = Review.objects.filter(
        reviewer=reviewer,
        submission__review_outcome__status=OutcomeStatus.FINAL,
    ).filter(
        Q(submission__review_outcome__review_count__gte=2)
        | Q(submission__review_outcome__adjudicated_by__isnull=False)
    )
    rows = list(
        reviews.values_list(
            "decision", "score", "submission__review_outcome__decision",
            "submission__review_outcome__score",
        )
    )  # fmt: skip
    if not rows:
        return {"compared": 0, "decision_agreement": None, "mean_score_difference": None}
    matches = sum(1 for decision, _, final, _ in rows if DECISION_OUTCOME.get(decision) == final)
    diffs = [abs(score - final) for _, score, _, final in rows if final is not None]
    return {
        "compared": len(rows),
        "decision_agreement": matches / len(rows),
        "mean_score_difference": sum(diffs) / len(diffs) if diffs else None,
    }


def reviewer_dashboard(reviewer: User) -> dict[str, Any]:
    week_ago = timezone.now() - timedelta(days=7)
    mine = Review.objects.filter(reviewer=reviewer)
    co_reviewed = Review.objects.filter(submission__in=mine.values("submission"))
    return {
        "reviews_total": mine.count(),
        "reviews_week": mine.filter(created_at__gte=week_ago).count(),
        "pairwise_total": reviewer.pairwise_judgements.count(),  # type: ignore[attr-defined]
        "throughput": throughput(reviewer),
        "consensus": agreement_with_consensus(reviewer),
        "overturns": overturn_rate(ReviewScore.objects.filter(review__reviewer=reviewer)),
        "reliability": reliability(co_reviewed),
    }


def reviewer_rows() -> list[dict[str, Any]]:
    """One row per reviewer with any review or claim, for the admin overview."""
    week_ago = timezone.now() - timedelta(days=7)
    reviewer_ids = set(Review.objects.values_list("reviewer_id", flat=True)) | set(
        ReviewAssignment.objects.filter(status=AssignmentStatus.CLAIMED).values_list(
            "reviewer_id", flat=True
        )
    )
    rows = []
    for user in User.objects.filter(pk__in=reviewer_ids).order_by("username"):
        mine = Review.objects.filter(reviewer=user)
        total = mine.count()
        rows.append(
            {
                "reviewer": user,
                "reviews_total": total,
                "reviews_week": mine.filter(created_at__gte=week_ago).count(),
                "per_day": mine.filter(created_at__gte=week_ago).count() / 7,
                "active_claims": ReviewAssignment.objects.filter(
                    reviewer=user, status=AssignmentStatus.CLAIMED
                ).count(),
                "consensus": agreement_with_consensus(user),
                "overturns": overturn_rate(ReviewScore.objects.filter(review__reviewer=user)),
                "reliability": reliability(
                    Review.objects.filter(submission__in=mine.values("submission"))
                ),
            }
        )
    return rows


def task_rows() -> list[dict[str, Any]]:
    """Agreement per task, over every version's reviews."""
    rows = []
    task_ids = (
        Review.objects.values_list("submission__task_version__task_id", flat=True)
        .order_by()
        .distinct()
    )
    for task in Task.objects.filter(pk__in=list(task_ids)).order_by("slug"):
        reviews = Review.objects.filter(submission__task_version__task=task)
        rows.append(
            {
                "task": task,
                "reviews": reviews.count(),
                "reliability": reliability(reviews),
                "overturns": overturn_rate(ReviewScore.objects.filter(review__in=reviews)),
            }
        )
    return rows


def overview() -> dict[str, Any]:
    every = Review.objects.all()
    return {
        "reviewers": reviewer_rows(),
        "tasks": task_rows(),
        "pairs": kappa_pairs(every),
        "overall": reliability(every),
        "overturns": overturn_rate(ReviewScore.objects.all()),
        "throughput": throughput(),
        "outcomes": {
            **dict.fromkeys(OutcomeStatus.values, 0),
            **dict(
                ReviewOutcome.objects.values_list("status")
                .annotate(n=Count("pk"))
                .values_list("status", "n")
            ),
        },
    }
