"""Graded submissions enter the queue; reviewers claim items least-loaded first,
for a limited time; nobody reviews their own task, their own submission, or the
same submission twice."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews import jobs
from reviews import services as review_services
from reviews.models import AssignmentStatus, AuditEvent, ReviewAssignment
from submissions import services as submission_services
from submissions.models import Submission, SubmissionStatus
from tests import factories, recorded
from tests.reviews.conftest import (
    full_review,
    graded,
    next_claim,
    open_slots,
    outcome_of,
    report,
    review_as,
    set_policy,
)

pytestmark = pytest.mark.django_db


def test_storing_a_grading_puts_the_submission_in_the_queue_once_it_commits(
    task, django_capture_on_commit_callbacks
):
    submission = factories.make_submission(task.current_version)
    assert submission_services.submission_claim(submission_id=submission.pk)

    with django_capture_on_commit_callbacks(execute=True):
        submission_services.grading_store(submission_id=submission.pk, attempt=1, report=report())

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.AWAITING_REVIEW
    assert open_slots(submission) == 1


def test_a_task_can_ask_for_several_independent_reviews(task):
    set_policy(task, 3)

    submission = graded(task)

    slots = ReviewAssignment.objects.filter(submission=submission)
    assert sorted(slots.values_list("slot", flat=True)) == [1, 2, 3]


def test_a_task_with_review_turned_off_keeps_its_submissions_graded(task):
    set_policy(task, 0)

    submission = graded(task, enter_queue=False)
    assert review_services.review_queue_enter(submission_id=submission.pk) == []

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.GRADED


def test_the_sweeper_enters_graded_submissions_whose_hook_never_ran(task):
    submission = graded(task, enter_queue=False)
    Submission.objects.filter(pk=submission.pk).update(
        status_changed_at=timezone.now() - timedelta(minutes=10)
    )

    assert jobs.sweep_job() == [submission.pk]
    assert jobs.sweep_job() == []  # safe to run twice
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.AWAITING_REVIEW


def test_the_least_loaded_submission_is_offered_first(task, make_reviewer):
    set_policy(task, 2)
    older = graded(task)
    newer = graded(task)
    first, second = make_reviewer("r1"), make_reviewer("r2")

    # r1 takes the oldest; r2 is offered the newer one, which nobody has started,
    # rather than the second slot of the one r1 is on.
    assert next_claim(first).submission_id == older.pk
    assert next_claim(second).submission_id == newer.pk


def test_asking_again_returns_the_claim_already_held(task, make_reviewer):
    graded(task)
    graded(task)
    reviewer = make_reviewer("r1")

    claim = next_claim(reviewer)

    assert review_services.assignment_claim_next(reviewer=reviewer) == claim
    assert ReviewAssignment.objects.filter(reviewer=reviewer).count() == 1


def test_nobody_reviews_a_submission_to_a_task_they_wrote(task, task_author):
    from benchwright import roles

    roles.grant(task_author, roles.REVIEWER)
    graded(task)

    assert review_services.assignment_claim_next(reviewer=task_author) is None


def test_nobody_reviews_their_own_submission(task, make_reviewer):
    reviewer = make_reviewer("r1")
    graded(task, submitter=reviewer)

    assert review_services.assignment_claim_next(reviewer=reviewer) is None


def test_nobody_reviews_the_same_submission_twice(task, make_reviewer):
    set_policy(task, 2)
    submission = graded(task)
    reviewer = make_reviewer("r1")
    review_as(reviewer)

    assert open_slots(submission) == 1
    assert review_services.assignment_claim_next(reviewer=reviewer) is None
    assert review_services.assignment_claim_next(reviewer=make_reviewer("r2")) is not None


def test_a_non_reviewer_cannot_claim(task):
    graded(task)
    author = factories.make_user("author")

    with pytest.raises(review_services.NotAllowed):
        review_services.assignment_claim_next(reviewer=author)


def test_an_expired_claim_returns_to_the_queue_when_the_next_reviewer_asks(task, make_reviewer):
    graded(task)
    first, second = make_reviewer("r1"), make_reviewer("r2")
    claim = next_claim(first)
    ReviewAssignment.objects.filter(pk=claim.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    taken = next_claim(second)

    assert taken.pk == claim.pk and taken.reviewer == second
    assert AuditEvent.objects.filter(verb="claim.expired", target_id=claim.pk).exists()
    # The first reviewer's late review is refused: the item went to someone else.
    with pytest.raises(review_services.Conflict, match="went to another reviewer"):
        review_services.review_submit(assignment_id=claim.pk, reviewer=first, data=full_review())


def test_the_periodic_job_expires_claims(task, make_reviewer):
    graded(task)
    claim = next_claim(make_reviewer("r1"))
    ReviewAssignment.objects.filter(pk=claim.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert jobs.expire_claims_job() == [claim.pk]

    claim.refresh_from_db()
    assert claim.status == AssignmentStatus.OPEN and claim.reviewer is None


def test_a_late_review_still_counts_when_nobody_took_the_item(task, make_reviewer):
    submission = graded(task)
    reviewer = make_reviewer("r1")
    claim = next_claim(reviewer)
    ReviewAssignment.objects.filter(pk=claim.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    review_services.assignments_expire()

    review = review_services.review_submit(
        assignment_id=claim.pk, reviewer=reviewer, data=full_review()
    )

    assert review.submission_id == submission.pk


def test_a_released_item_comes_back_last_for_whoever_skipped_it(task, make_reviewer):
    skipped = graded(task)
    other = graded(task)
    reviewer = make_reviewer("r1")
    claim = next_claim(reviewer)
    assert claim.submission_id == skipped.pk

    review_services.assignment_release(assignment_id=claim.pk, reviewer=reviewer)

    assert next_claim(reviewer).submission_id == other.pk


def test_a_regrade_starts_a_new_round_with_fresh_reviewers(task, make_reviewer):
    submission = graded(task)
    first = make_reviewer("r1")
    review_as(first)
    submission_services.submission_regrade(submission=submission)
    assert submission_services.submission_claim(submission_id=submission.pk)
    submission_services.grading_store(submission_id=submission.pk, attempt=2, report=report())

    review_services.review_queue_enter(submission_id=submission.pk)

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.AWAITING_REVIEW
    assert outcome_of(submission).status == "pending"
    assert review_services.assignment_claim_next(reviewer=first) is None  # never twice
    assert review_services.assignment_claim_next(reviewer=make_reviewer("r2")) is not None


def test_the_tasks_author_or_an_admin_sets_its_review_policy(task, task_author, make_reviewer):
    policy = review_services.policy_set(task=task, actor=task_author, reviews_required=3)

    assert policy.reviews_required == 3
    event = AuditEvent.objects.get(verb="policy.set")
    assert event.before["reviews_required"] == 1 and event.after["reviews_required"] == 3
    with pytest.raises(review_services.NotAllowed):
        review_services.policy_set(task=task, actor=make_reviewer("r1"), reviews_required=1)
    with pytest.raises(review_services.ReviewError, match="from 0 to 5"):
        review_services.policy_set(task=task, actor=task_author, reviews_required=9)


def test_only_accepted_submissions_are_reviewed_unless_the_task_asks_for_failures(task):
    wrong = graded(task, grading=report(recorded.WRONG_ANSWER), enter_queue=False)
    empty = graded(
        task, grading=report(recorded.EMPTY), files={"solution.py": " \n"}, enter_queue=False
    )
    assert review_services.review_queue_enter(submission_id=wrong.pk) == []

    set_policy(task, 1, review_failures=True)
    assert open_slots(graded(task, grading=report(recorded.WRONG_ANSWER))) == 1
    # Nothing to read: never queued, nor picked up again by the sweep.
    assert review_services.review_queue_enter(submission_id=empty.pk) == []
    assert review_services.review_queue_sweep(graded_before=timedelta(0)) == [wrong.pk]
    empty.refresh_from_db()
    assert empty.status == SubmissionStatus.GRADED


def test_unfinished_gradings_are_not_reviewed(task):
    set_policy(task, 1, review_failures=True)
    waiting = graded(task, grading=report(recorded.NEEDS_HARDWARE), enter_queue=False)

    assert review_services.review_queue_enter(submission_id=waiting.pk) == []
    waiting.refresh_from_db()
    assert waiting.status == SubmissionStatus.GRADED


def test_a_policy_outside_its_limits_is_refused(task, task_author):
    with pytest.raises(review_services.ReviewError, match="less than or equal to 1"):
        review_services.policy_set(
            task=task, actor=task_author, reviews_required=2, disagreement_threshold=1.5
        )
