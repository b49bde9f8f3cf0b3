"""Reviews combine into an outcome: final when they agree, adjudicated by a senior
reviewer when they do not; the submission becomes reviewed, its submitter's
webhook fires, and every step is in the audit trail."""

import json
from typing import Any

import pytest

from reviews import selectors
from reviews import services as review_services
from reviews.access import grant_senior
from reviews.models import AuditEvent, OutcomeStatus, ReviewOutcome
from rubrics.models import CriterionScore, ScoreSource
from submissions.models import SubmissionStatus
from tests import factories
from tests.reviews.conftest import full_review, graded, outcome_of, review_as, set_policy
from webhooks.models import Event, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


def test_one_required_review_finalises_the_submission(task, client_user, make_reviewer):
    submission = graded(task, submitter=client_user)

    review_as(make_reviewer("r1"), clarity=1, care=3)

    submission.refresh_from_db()
    outcome = outcome_of(submission)
    assert submission.status == SubmissionStatus.REVIEWED
    assert outcome.status == OutcomeStatus.FINAL and outcome.decision == "accepted"
    assert outcome.score == pytest.approx(0.9) and outcome.score_spread == 0


def test_the_final_outcome_writes_consensus_criterion_scores(task, make_reviewer):
    set_policy(task, 2, disagreement_threshold=0.6)
    submission = graded(task)
    review_as(make_reviewer("r1"), clarity=2, care=1)
    review_as(make_reviewer("r2"), clarity=1, care=2, overturn={"correct": "uses torch.relu"})

    human = dict(
        CriterionScore.objects.filter(submission=submission, source=ScoreSource.HUMAN).values_list(
            "criterion__key", "points"
        )
    )

    # Means of the two reviews; the overturned automatic criterion gets a human score too.
    assert human == {"clarity": 1.5, "numerical-care": 1.5, "correct": 2.5}
    outcome = ReviewOutcome.objects.get(submission=submission)
    assert outcome.score == pytest.approx((0.8 + 0.3) / 2)  # (5+2+1)/10 and (0+1+2)/10
    assert outcome.score_spread == pytest.approx(0.5)
    assert outcome.status == OutcomeStatus.FINAL  # 0.5 apart, within this task's 0.6


def test_agreeing_decisions_with_totals_far_apart_go_to_adjudication(task, make_reviewer):
    set_policy(task, 2, disagreement_threshold=0.3)
    submission = graded(task)
    review_as(make_reviewer("r1"), clarity=2, care=3)
    review_as(make_reviewer("r2"), clarity=0, care=0)

    outcome = ReviewOutcome.objects.get(submission=submission)
    assert outcome.status == OutcomeStatus.ADJUDICATION
    assert outcome.rule == "rubric totals differ by 0.50, more than 0.30"
    assert not CriterionScore.objects.filter(submission=submission, source=ScoreSource.HUMAN)


def test_the_outcome_waits_for_every_required_review(task, make_reviewer):
    set_policy(task, 2)
    submission = graded(task)

    review_as(make_reviewer("r1"))

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.AWAITING_REVIEW
    assert outcome_of(submission).status == OutcomeStatus.PENDING
    assert outcome_of(submission).review_count == 1


def test_the_submitters_webhook_fires_when_the_review_is_final(
    task, client_user, make_reviewer, django_capture_on_commit_callbacks
):
    WebhookEndpoint.objects.create(
        user=client_user,
        url="http://127.0.0.1:9/hook",
        secret="s",
        events=[Event.SUBMISSION_REVIEWED],
    )
    submission = graded(task, submitter=client_user)

    with django_capture_on_commit_callbacks() as callbacks:
        review_as(make_reviewer("r1"))
    assert not WebhookDelivery.objects.exists()  # nothing before the review commits
    for callback in callbacks:
        callback()

    delivery = WebhookDelivery.objects.get()
    assert delivery.event == Event.SUBMISSION_REVIEWED
    body = json.loads(delivery.body)
    assert body["type"] == "submission.reviewed" and body["data"]["id"] == submission.pk
    assert body["data"]["status"] == "reviewed"


def test_the_outcome_for_the_submitter_has_no_reviewer_names(task, make_reviewer):
    submission = graded(task)
    review_as(make_reviewer("reviewer-name-xyz"), feedback="Tidy kernel.")

    outcome = selectors.submission_review_outcome(submission)
    assert outcome is not None

    assert outcome["decision"] == "accepted" and outcome["feedback"] == ["Tidy kernel."]
    assert outcome["reviewed_at"].endswith("Z")
    assert "reviewer-name-xyz" not in json.dumps(outcome)  # plain JSON, no names


def disagreeing(task, make_reviewer):
    set_policy(task, 2)
    submission = graded(task)
    first, second = make_reviewer("r1"), make_reviewer("r2")
    review_as(first, decision="accept")
    review_as(second, decision="reject", clarity=1, care=2)
    return submission, first, second


def test_an_accept_beside_a_reject_goes_to_adjudication(task, make_reviewer):
    submission, _, _ = disagreeing(task, make_reviewer)

    submission.refresh_from_db()
    outcome = outcome_of(submission)
    assert outcome.status == OutcomeStatus.ADJUDICATION
    assert "accept beside a reject" in outcome.rule
    assert submission.status == SubmissionStatus.AWAITING_REVIEW


def test_a_senior_reviewers_decision_is_final_and_recorded_with_a_reason(
    task, make_reviewer, senior
):
    submission, _, _ = disagreeing(task, make_reviewer)
    outcome = outcome_of(submission)
    assert list(selectors.adjudication_queue(senior)) == [outcome]

    review_services.adjudication_decide(
        outcome_id=outcome.pk,
        adjudicator=senior,
        decision="needs_fix",
        reason="Correct, but the tail handling is accidental.",
    )

    outcome.refresh_from_db()
    submission.refresh_from_db()
    assert outcome.status == OutcomeStatus.FINAL and outcome.decision == "needs_fix"
    assert outcome.adjudicated_by == senior
    assert outcome.adjudication_reason == "Correct, but the tail handling is accidental."
    assert submission.status == SubmissionStatus.REVIEWED
    event = AuditEvent.objects.get(verb="adjudication.decided")
    assert event.actor == senior
    assert event.before["status"] == "adjudication" and event.after["decision"] == "needs_fix"
    with pytest.raises(review_services.Conflict):  # final means final
        review_services.adjudication_decide(
            outcome_id=outcome.pk, adjudicator=senior, decision="accepted", reason="changed mind"
        )


def test_an_adjudicator_may_set_the_final_score(task, make_reviewer, senior):
    submission, _, _ = disagreeing(task, make_reviewer)

    outcome = review_services.adjudication_decide(
        outcome_id=outcome_of(submission).pk,
        adjudicator=senior,
        decision="accepted",
        reason="r2 misread the rubric",
        score=0.85,
    )

    assert outcome.score == pytest.approx(0.85)


def test_only_an_uninvolved_senior_reviewer_adjudicates(task, make_reviewer, senior):
    submission, first, _ = disagreeing(task, make_reviewer)
    outcome_id = outcome_of(submission).pk
    kwargs: dict[str, Any] = {"outcome_id": outcome_id, "decision": "accepted", "reason": "fine"}

    with pytest.raises(review_services.NotAllowed):
        review_services.adjudication_decide(adjudicator=make_reviewer("plain"), **kwargs)
    grant_senior(first)  # a senior who reviewed it has a stake in it
    with pytest.raises(review_services.NotAllowed):
        review_services.adjudication_decide(adjudicator=first, **kwargs)
    with pytest.raises(review_services.ReviewError, match="reason"):
        review_services.adjudication_decide(**{**kwargs, "adjudicator": senior, "reason": " "})


def test_an_admin_adjudicates_too(task, make_reviewer):
    submission, _, _ = disagreeing(task, make_reviewer)
    admin = factories.make_user("admin")

    outcome = review_services.adjudication_decide(
        outcome_id=outcome_of(submission).pk,
        adjudicator=admin,
        decision="rejected",
        reason="wrong",
    )

    assert outcome.decision == "rejected"


def test_an_edit_that_resolves_the_disagreement_finalises(task, make_reviewer):
    submission, _, second = disagreeing(task, make_reviewer)
    review = second.submission_reviews.get()

    review_services.review_edit(
        review_id=review.pk, editor=second, data=full_review(decision="accept", care=2)
    )

    submission.refresh_from_db()
    assert outcome_of(submission).status == OutcomeStatus.FINAL
    assert outcome_of(submission).decision == "accepted"
    event = AuditEvent.objects.get(verb="review.edited")
    assert event.actor == second
    assert event.before["decision"] == "reject" and event.after["decision"] == "accept"
    assert event.before["scores"]["numerical-care"]["points"] == 2.0
    assert event.before["scores"]["clarity"]["points"] == 1.0
    assert event.after["scores"]["clarity"]["points"] == 2.0


def test_a_review_cannot_change_once_the_outcome_is_final(task, make_reviewer):
    reviewer = make_reviewer("r1")
    graded(task)
    review = review_as(reviewer)

    with pytest.raises(review_services.Conflict, match="final"):
        review_services.review_edit(review_id=review.pk, editor=reviewer, data=full_review())


def test_only_its_reviewer_edits_a_review(task, make_reviewer):
    set_policy(task, 2)
    graded(task)
    review = review_as(make_reviewer("r1"))

    with pytest.raises(review_services.NotAllowed):
        review_services.review_edit(
            review_id=review.pk, editor=make_reviewer("r2"), data=full_review()
        )


def test_the_audit_trail_records_claims_reviews_and_outcomes(task, make_reviewer):
    graded(task)
    reviewer = make_reviewer("r1")

    review = review_as(reviewer, feedback="Looks right.")

    verbs = list(AuditEvent.objects.order_by("pk").values_list("verb", flat=True))
    assert verbs == ["queue.entered", "claim.created", "review.submitted", "outcome.finalized"]
    submitted = AuditEvent.objects.get(verb="review.submitted")
    assert submitted.actor == reviewer and submitted.target_id == review.pk
    assert submitted.after["feedback"] == "Looks right."
    assert submitted.after["scores"]["clarity"]["points"] == 2.0


def test_audit_events_are_append_only(task, make_reviewer):
    graded(task)
    event = AuditEvent.objects.get()
    event.verb = "rewritten"

    with pytest.raises(ValueError, match="append-only"):
        event.save()
