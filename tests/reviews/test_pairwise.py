"""Pairwise review: informative pairs, blind, and judgements kept as clean rows."""

from typing import Any

import pytest

from benchwright import roles
from reviews import selectors
from reviews import services as review_services
from reviews.models import AuditEvent, PairOffer, PairwiseJudgement, ReviewOutcome
from tests import recorded
from tests.reviews.conftest import (
    graded,
    next_offer,
    publish_rubric_task,
    report,
    review_as,
    set_policy,
)

pytestmark = pytest.mark.django_db

ALL_CRITERIA = {"clarity": "a", "numerical-care": "tie"}


def judge(offer, reviewer, **changes: Any):
    data: dict[str, Any] = {
        "winner": "a",
        "criterion_winners": ALL_CRITERIA,
        "reason": "A masks the tail.",
    }
    data.update(changes)
    return review_services.pairwise_judge(
        offer_id=offer.pk, reviewer=reviewer, data=review_services.PairInput(**data)
    )


def test_a_pair_is_two_accepted_submissions_to_the_same_version(task, make_reviewer):
    first = graded(task, model="m-1")
    second = graded(task, model="m-2")
    set_policy(task, 1, review_failures=True)  # the wrong answer is queued, never paired
    graded(task, model="m-3", grading=report(recorded.WRONG_ANSWER))
    other_task = publish_rubric_task(task.owner, slug="other-task")
    graded(other_task, model="m-4")

    offer = next_offer(make_reviewer("r1"))

    assert {offer.submission_a_id, offer.submission_b_id} == {first.pk, second.pk}
    assert offer.task_version_id == task.current_version_id


def test_pairs_prefer_different_models_then_close_scores(task, make_reviewer):
    same_a = graded(task, model="same")
    same_b = graded(task, model="same")
    far = graded(task, model="other")
    close = graded(task, model="third")
    # Give the submissions final review scores: close and same_a are 0.05 apart.
    for submission, score in ((same_a, 0.8), (same_b, 0.8), (far, 0.1), (close, 0.75)):
        ReviewOutcome.objects.filter(submission=submission).update(
            status="final", decision="accepted", score=score
        )

    pair = selectors.next_pair(make_reviewer("r1"))
    assert pair is not None
    first, second = pair

    # same_a/same_b score the same but share a model: a pair across models wins.
    assert {first.pk, second.pk} in ({same_a.pk, close.pk}, {same_b.pk, close.pk})


def test_a_reviewer_never_pairs_submissions_to_their_own_task(task, task_author):
    roles.grant(task_author, roles.REVIEWER)
    graded(task, model="m-1")
    graded(task, model="m-2")

    assert review_services.pair_offer_next(reviewer=task_author) is None


def test_the_same_pair_is_not_offered_twice(task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2")
    reviewer = make_reviewer("r1")
    offer = next_offer(reviewer)
    assert review_services.pair_offer_next(reviewer=reviewer) == offer  # still open

    judge(offer, reviewer)

    assert review_services.pair_offer_next(reviewer=reviewer) is None


def test_a_skipped_pair_is_not_offered_again(task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2")
    graded(task, model="m-3")
    reviewer = make_reviewer("r1")
    offer = next_offer(reviewer)

    review_services.pair_offer_skip(offer_id=offer.pk, reviewer=reviewer)

    following = review_services.pair_offer_next(reviewer=reviewer)
    assert following is not None
    assert {following.submission_a_id, following.submission_b_id} != {
        offer.submission_a_id,
        offer.submission_b_id,
    }


def test_a_judgement_records_the_pair_as_shown_winners_and_reason(task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2")
    reviewer = make_reviewer("r1")
    offer = next_offer(reviewer)

    judgement = judge(offer, reviewer, winner="b")

    row = PairwiseJudgement.objects.get(pk=judgement.pk)
    assert (row.submission_a_id, row.submission_b_id) == (
        offer.submission_a_id,
        offer.submission_b_id,
    )
    assert row.winner == "b" and row.criterion_winners == ALL_CRITERIA
    assert row.reason == "A masks the tail." and row.reviewer == reviewer
    assert row.task_version_id == task.current_version_id and row.created_at is not None
    assert AuditEvent.objects.filter(verb="pairwise.judged", target_id=row.pk).exists()
    assert not PairOffer.objects.get(pk=offer.pk).is_open


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"winner": "c"}, "winner must be"),
        ({"criterion_winners": {"clarity": "a"}}, "missing: numerical-care"),
        ({"criterion_winners": {**ALL_CRITERIA, "correct": "a"}}, "unknown: correct"),
        ({"criterion_winners": {"clarity": "a", "numerical-care": "x"}}, "a, b or tie"),
        ({"reason": "  "}, "say why"),
    ],
)
def test_a_judgement_needs_every_human_criterion_and_a_reason(
    task, make_reviewer, changes, message
):
    graded(task, model="m-1")
    graded(task, model="m-2")
    reviewer = make_reviewer("r1")
    offer = next_offer(reviewer)

    with pytest.raises(review_services.ReviewError, match=message):
        judge(offer, reviewer, **changes)
    assert not PairwiseJudgement.objects.exists()


def test_a_pair_offered_to_one_reviewer_cannot_be_judged_by_another(task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2")
    offer = next_offer(make_reviewer("r1"))

    with pytest.raises(review_services.NotAllowed):
        judge(offer, make_reviewer("r2"))


def test_reviewed_submissions_can_be_paired_too(task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2")
    review_as(make_reviewer("r1"))
    review_as(make_reviewer("r2"))

    assert review_services.pair_offer_next(reviewer=make_reviewer("r3")) is not None
