"""Score arithmetic: a review's rubric total with penalties and overturns, and how
several reviews combine into a decision and a score."""

import pytest

from reviews import scoring
from reviews import services as review_services
from reviews.models import OutcomeDecision, ReviewScore
from tests.reviews.conftest import (
    full_review,
    graded,
    next_claim,
    review_as,
    set_policy,
    tainted_report,
)

pytestmark = pytest.mark.django_db


def test_a_full_marks_review_scores_one(task, make_reviewer):
    graded(task)  # accepted: correct +5, no integrity finding

    review = review_as(make_reviewer("r1"), clarity=2, care=3)

    assert review.score == pytest.approx(1.0)  # (5 + 0 + 2 + 3) / 10


def test_human_levels_count_as_points_over_the_positive_total(task, make_reviewer):
    graded(task)

    review = review_as(make_reviewer("r1"), clarity=1, care=0)

    assert review.score == pytest.approx(0.6)  # (5 + 1 + 0) / 10
    points = dict(ReviewScore.objects.filter(review=review).values_list("criterion__key", "points"))
    assert points == {"correct": 5.0, "integrity": 0.0, "clarity": 1.0, "numerical-care": 0.0}


def test_a_penalty_subtracts_from_the_points_achieved(task, make_reviewer):
    set_policy(task, 1, review_failures=True)
    graded(task, grading=tainted_report())  # integrity finding: -3

    review = review_as(make_reviewer("r1"), decision="reject", clarity=2, care=3)

    # Not accepted: "correct" earns nothing; the penalty takes 3 of the 5 human points.
    assert review.score == pytest.approx(0.2)  # (0 - 3 + 2 + 3) / 10


def test_a_total_below_zero_is_clipped_to_zero(task, make_reviewer):
    set_policy(task, 1, review_failures=True)
    set_policy(task, 1, review_failures=True)
    graded(task, grading=tainted_report())

    review = review_as(make_reviewer("r1"), decision="reject", clarity=1, care=0)

    assert review.score == 0.0  # (0 - 3 + 1 + 0) / 10 = -0.2, clipped


def test_overturning_a_penalty_removes_it(task, make_reviewer):
    set_policy(task, 1, review_failures=True)
    graded(task, grading=tainted_report())

    review = review_as(
        make_reviewer("r1"),
        clarity=2,
        care=3,
        overturn={"integrity": "it writes into a scratch copy, not the caller's input"},
    )

    assert review.score == pytest.approx(0.5)  # (0 + 0 + 2 + 3) / 10
    row = ReviewScore.objects.get(review=review, criterion__key="integrity")
    assert row.overturned and row.points == 0.0 and row.automatic_points == -3.0


def test_overturning_a_met_rule_takes_its_points_away(task, make_reviewer):
    graded(task)

    review = review_as(
        make_reviewer("r1"), clarity=2, care=3, overturn={"correct": "reads the reference"}
    )

    assert review.score == pytest.approx(0.5)  # (0 + 2 + 3) / 10


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        (["accept"], OutcomeDecision.ACCEPTED),
        (["accept", "accept", "accept"], OutcomeDecision.ACCEPTED),
        (["reject", "reject"], OutcomeDecision.REJECTED),
        (["reject", "needs_fix"], OutcomeDecision.REJECTED),
        (["needs_fix", "needs_fix"], OutcomeDecision.NEEDS_FIX),
        (["accept", "reject"], None),
        (["accept", "needs_fix"], None),
        (["accept", "reject", "needs_fix"], None),
    ],
)
def test_decisions_combine_by_the_stated_rule(decisions, expected):
    decision, rule = scoring.combine_decisions(decisions)

    assert decision == expected
    assert rule


def test_the_final_score_is_the_mean_with_spread_and_deviation_kept():
    result = scoring.consensus(["accept", "accept", "accept"], [0.6, 0.8, 0.7], threshold=0.3)

    assert result.decision == OutcomeDecision.ACCEPTED
    assert result.score == pytest.approx(0.7)
    assert result.spread == pytest.approx(0.2)
    assert result.stdev == pytest.approx((0.02 / 3) ** 0.5)


def test_agreeing_decisions_with_totals_too_far_apart_go_to_adjudication():
    assert scoring.consensus(["accept", "accept"], [0.2, 0.9], threshold=0.3).decision is None
    # A spread exactly at the threshold is not beyond it.
    assert scoring.consensus(["accept", "accept"], [0.5, 0.8], threshold=0.3).decision == "accepted"


def test_a_level_that_is_not_in_the_rubric_is_refused(task, make_reviewer):
    graded(task)
    reviewer = make_reviewer("r1")
    assignment = next_claim(reviewer)

    with pytest.raises(review_services.ReviewError, match="clarity: the level must be one of"):
        review_services.review_submit(
            assignment_id=assignment.pk, reviewer=reviewer, data=full_review(clarity=1.5)
        )


def test_every_human_criterion_needs_a_level(task, make_reviewer):
    graded(task)
    reviewer = make_reviewer("r1")
    assignment = next_claim(reviewer)
    data = full_review()
    missing = review_services.ReviewInput(
        decision="accept", feedback="ok", scores={"clarity": data.scores["clarity"]}
    )

    with pytest.raises(review_services.ReviewError, match="numerical-care: choose a level"):
        review_services.review_submit(assignment_id=assignment.pk, reviewer=reviewer, data=missing)


def test_an_overturn_needs_a_reason(task, make_reviewer):
    graded(task)
    reviewer = make_reviewer("r1")
    assignment = next_claim(reviewer)

    with pytest.raises(review_services.ReviewError, match="say why"):
        review_services.review_submit(
            assignment_id=assignment.pk,
            reviewer=reviewer,
            data=full_review(overturn={"correct": "   "}),
        )
