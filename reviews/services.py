"""Every write of the reviews app: the queue, claims, reviews, outcomes,
adjudication, pairwise judgements and the audit trail.

Status changes go through ``benchwright.state.transition`` with the maps in
``reviews.models``; the submission's own status (awaiting_review -> reviewed)
through ``submissions.services.submission_set_status``.

Claims: a reviewer asks for the next item and gets an open slot chosen by
``selectors.claimable_assignments`` (least-loaded first: the submission with
the fewest reviews taken or done, then the oldest), locked with ``SELECT … FOR
UPDATE SKIP LOCKED`` so two reviewers asking at once always get different
slots. A claim holds for the task's ``claim_minutes``; expired claims go back to
the queue lazily (on every claim) and through the periodic sweeper job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from benchwright import roles
from benchwright.state import sources_for, transition
from graders.verdicts import Verdict
from rubrics.models import Criterion, CriterionKind, CriterionScore, ScoreSource
from rubrics.services import rubric_total
from submissions import services as submission_services
from submissions.models import GradingRun, Submission, SubmissionFile, SubmissionStatus
from submissions.signals import send_on_commit
from tasks.models import Task

from . import access, scoring, selectors
from .models import (
    ASSIGNMENT_TRANSITIONS,
    OUTCOME_TRANSITIONS,
    AssignmentStatus,
    AuditEvent,
    Decision,
    LineComment,
    OutcomeDecision,
    OutcomeStatus,
    PairOffer,
    PairwiseJudgement,
    Preference,
    Review,
    ReviewAssignment,
    ReviewOutcome,
    ReviewPolicy,
    ReviewScore,
)
from .signals import submission_reviewed

MAX_FEEDBACK_CHARS = 20_000
MAX_COMMENT_CHARS = 5_000
MAX_LINE_COMMENTS = 200
# Not a finished grading: the kernel still has to run on its target hardware.
UNREVIEWED_VERDICTS = frozenset({Verdict.NEEDS_HARDWARE.value})


class ReviewError(Exception):
    """The request cannot be carried out; the message says why, for the reviewer."""


class NotAllowed(ReviewError):
    """The user may not do this."""


class Conflict(ReviewError):
    """The object is not in a state that allows this (e.g. the claim went to someone else)."""


# Audit ----------------------------------------------------------------------------------------


def audit(
    *,
    actor: User | None,
    verb: str,
    target: Any,
    submission_id: int | None = None,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        actor=actor,
        verb=verb,
        target_type=target._meta.model_name,
        target_id=target.pk,
        submission_id=submission_id,
        before=dict(before or {}),
        after=dict(after or {}),
    )


# Policy ---------------------------------------------------------------------------------------


@transaction.atomic
def policy_set(
    *,
    task: Task,
    actor: User,
    reviews_required: int,
    claim_minutes: int | None = None,
    disagreement_threshold: float | None = None,
    review_failures: bool | None = None,
) -> ReviewPolicy:
    """Set how the task's submissions are reviewed (admins and the task's author)."""
    if not (roles.is_admin(actor) or task.owner_id == actor.pk):
        raise NotAllowed("only an admin or the task's author sets its review policy")
    if not 0 <= reviews_required <= 5:
        raise ReviewError("reviews_required must be from 0 to 5")
    policy, _ = ReviewPolicy.objects.get_or_create(task=task)
    before = _policy_data(policy)
    policy.reviews_required = reviews_required
    if claim_minutes is not None:
        policy.claim_minutes = claim_minutes
    if disagreement_threshold is not None:
        policy.disagreement_threshold = disagreement_threshold
    if review_failures is not None:
        policy.review_failures = review_failures
    try:
        policy.full_clean(exclude=["task"])
    except ValidationError as exc:
        raise ReviewError("; ".join(exc.messages)) from None
    policy.save()
    audit(actor=actor, verb="policy.set", target=policy, before=before, after=_policy_data(policy))
    return policy


def _policy_data(policy: ReviewPolicy) -> dict[str, Any]:
    return {
        "reviews_required": policy.reviews_required,
        "claim_minutes": policy.claim_minutes,
        "disagreement_threshold": policy.disagreement_threshold,
        "review_failures": policy.review_failures,
    }


# The queue ------------------------------------------------------------------------------------


def _reviewable() -> Q:
    """Graded submissions that go to reviewers: accepted ones, and the others too where
    the task's policy asks for failures, but never one with nothing to read (every
    file blank) nor one that still waits for hardware (not a finished grading)."""
    with_code = Exists(
        SubmissionFile.objects.filter(submission=OuterRef("pk")).exclude(content__regex=r"^\s*$")
    )
    wanted = Q(verdict=Verdict.ACCEPTED) | Q(
        task_version__task__review_policy__review_failures=True
    )
    return wanted & with_code & ~Q(verdict__in=UNREVIEWED_VERDICTS)


@transaction.atomic
def review_queue_enter(*, submission_id: int) -> list[ReviewAssignment]:
    """A graded submission enters the review queue (graded -> awaiting_review) with
    one open slot per required review, if it is one reviewers should see (see
    ``_reviewable``): by default only accepted submissions are; a failure earns no
    review unless the task asks for them. Safe to run twice: only a submission still
    in ``graded`` enters. A regraded submission starts a new round: its old open
    slots are cancelled and its reviews of the earlier grading no longer count."""
    submission = _lock_submission(submission_id)
    if submission.status != SubmissionStatus.GRADED:
        return []
    policy = selectors.policy_for(submission.task_version.task)
    if policy.reviews_required == 0:
        return []
    if not Submission.objects.filter(_reviewable(), pk=submission.pk).exists():
        return []
    _cancel_open_slots(submission)
    _outcome_restart(submission)
    submission_services.submission_set_status(
        submission_id=submission.pk,
        to=SubmissionStatus.AWAITING_REVIEW,
        from_=SubmissionStatus.GRADED,
    )
    first = (
        ReviewAssignment.objects.filter(submission=submission).aggregate(last=Max("slot"))["last"]
        or 0
    )
    slots = ReviewAssignment.objects.bulk_create(
        ReviewAssignment(submission=submission, slot=first + i + 1)
        for i in range(policy.reviews_required)
    )
    audit(
        actor=None,
        verb="queue.entered",
        target=submission,
        submission_id=submission.pk,
        after={"slots": [s.slot for s in slots], "reviews_required": policy.reviews_required},
    )
    return slots


def _cancel_open_slots(submission: Submission) -> None:
    """Every slot of the submission that may still be cancelled (open or claimed)."""
    cancellable = sources_for(AssignmentStatus.CANCELLED, ASSIGNMENT_TRANSITIONS)
    ReviewAssignment.objects.filter(submission=submission, status__in=cancellable).update(
        status=AssignmentStatus.CANCELLED,
        reviewer=None,
        claimed_at=None,
        expires_at=None,
        updated_at=timezone.now(),
    )


def _outcome_restart(submission: Submission) -> None:
    """A new round: the outcome collects reviews again, and the consensus scores of
    an earlier round stop counting."""
    outcome, created = ReviewOutcome.objects.get_or_create(submission=submission)
    CriterionScore.objects.filter(
        submission=submission, source=ScoreSource.HUMAN, grading_run__isnull=True
    ).delete()
    if created or outcome.status == OutcomeStatus.PENDING:
        return
    transition(
        ReviewOutcome.objects,
        outcome.pk,
        to=OutcomeStatus.PENDING,
        allowed=OUTCOME_TRANSITIONS,
        decision="",
        rule="",
        score=None,
        score_spread=None,
        score_stdev=None,
        review_count=0,
        finalized_at=None,
        adjudicated_by=None,
        adjudication_reason="",
        adjudicated_at=None,
    )


def review_queue_sweep(*, graded_before: timedelta) -> list[int]:
    """Enter graded submissions that missed the queue (the process that stored the
    grading died before its on-commit hook ran)."""
    cutoff = timezone.now() - graded_before
    waiting = (
        Submission.objects.filter(status=SubmissionStatus.GRADED, status_changed_at__lt=cutoff)
        .filter(_reviewable())
        .exclude(task_version__task__review_policy__reviews_required=0)
    )
    entered = []
    for pk in waiting.values_list("pk", flat=True)[:1000]:
        if review_queue_enter(submission_id=pk):
            entered.append(pk)
    return entered


# Claims ---------------------------------------------------------------------------------------


def assignments_expire(*, now: datetime | None = None) -> list[int]:
    """Expired claims go back to the queue. Rows another transaction holds are
    skipped: they are being claimed or submitted right now."""
    now = now or timezone.now()
    expired = []
    with transaction.atomic():
        rows = list(
            ReviewAssignment.objects.select_for_update(skip_locked=True).filter(
                status=AssignmentStatus.CLAIMED, expires_at__lt=now
            )
        )
        for row in rows:
            _reopen(row, actor=None, verb="claim.expired")
            expired.append(row.pk)
    return expired


def _reopen(assignment: ReviewAssignment, *, actor: User | None, verb: str) -> None:
    transition(
        ReviewAssignment.objects,
        assignment.pk,
        to=AssignmentStatus.OPEN,
        allowed=ASSIGNMENT_TRANSITIONS,
        from_=AssignmentStatus.CLAIMED,
        reviewer=None,
        claimed_at=None,
        expires_at=None,
    )
    audit(
        actor=actor,
        verb=verb,
        target=assignment,
        submission_id=assignment.submission_id,
        before={"reviewer": assignment.reviewer_id, "expires_at": _iso(assignment.expires_at)},
    )


def assignment_claim_next(*, reviewer: User) -> ReviewAssignment | None:
    """The reviewer's current claim, or a newly claimed slot; None when nothing is
    left for them. See the module docstring for the policy."""
    if not access.is_reviewer(reviewer):
        raise NotAllowed("only reviewers claim review items")
    assignments_expire()
    with transaction.atomic():
        # One claim at a time per reviewer, even from two browser tabs at once.
        User.objects.select_for_update().filter(pk=reviewer.pk).first()
        current = selectors.active_claim(reviewer)
        if current is not None:
            return current
        slot = (
            selectors.claimable_assignments(reviewer)
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if slot is None:
            return None
        _claim(slot, reviewer)
    slot.refresh_from_db()
    return slot


def _claim(slot: ReviewAssignment, reviewer: User) -> None:
    policy = selectors.policy_for(slot.submission.task_version.task)
    now = timezone.now()
    expires_at = now + timedelta(minutes=policy.claim_minutes)
    transition(
        ReviewAssignment.objects,
        slot.pk,
        to=AssignmentStatus.CLAIMED,
        allowed=ASSIGNMENT_TRANSITIONS,
        from_=AssignmentStatus.OPEN,
        reviewer=reviewer,
        claimed_at=now,
        expires_at=expires_at,
    )
    audit(
        actor=reviewer,
        verb="claim.created",
        target=slot,
        submission_id=slot.submission_id,
        after={"reviewer": reviewer.pk, "expires_at": _iso(expires_at)},
    )


@transaction.atomic
def assignment_release(*, assignment_id: int, reviewer: User) -> None:
    """Hand a claimed item back to the queue (skip it)."""
    assignment = ReviewAssignment.objects.select_for_update().filter(pk=assignment_id).first()
    if (
        assignment is None
        or assignment.status != AssignmentStatus.CLAIMED
        or assignment.reviewer_id != reviewer.pk
    ):
        raise Conflict("this item is not claimed by you")
    _reopen(assignment, actor=reviewer, verb="claim.released")


# Reviews --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreInput:
    """A reviewer's input for one criterion: a level (human criteria) or an
    overturn with its reason (automatic criteria)."""

    level: float | None = None
    comment: str = ""
    overturned: bool = False
    reason: str = ""


@dataclass(frozen=True)
class CommentInput:
    path: str
    line: int
    body: str


@dataclass(frozen=True)
class ReviewInput:
    decision: str
    feedback: str
    scores: Mapping[str, ScoreInput]
    comments: Sequence[CommentInput] = ()


def review_submit(*, assignment_id: int, reviewer: User, data: ReviewInput) -> Review:
    """Submit the review of a claimed item; raises ReviewError (nothing is written)."""
    with transaction.atomic():
        submission, assignment = _lock_item(assignment_id)
        _take_for_submit(assignment, reviewer)
        if submission.status != SubmissionStatus.AWAITING_REVIEW:
            raise Conflict("this submission is no longer awaiting review")
        run = selectors.latest_run(submission)
        if run is None:
            raise Conflict("this submission has no grading to review")
        criteria = selectors.criteria_of(submission)
        rows, total = _score_rows(criteria, selectors.automatic_scores(run), data)
        _check_decision(data)
        comments = _comment_rows(submission, data.comments)
        review = _create_review(assignment, run, data, total)
        _save_parts(review, rows, comments)
        transition(
            ReviewAssignment.objects,
            assignment.pk,
            to=AssignmentStatus.SUBMITTED,
            allowed=ASSIGNMENT_TRANSITIONS,
            from_=AssignmentStatus.CLAIMED,
            submitted_at=timezone.now(),
        )
        audit(
            actor=reviewer,
            verb="review.submitted",
            target=review,
            submission_id=submission.pk,
            after=selectors.review_snapshot(review),
        )
        _outcome_update(submission, actor=reviewer)
    return review


def _create_review(
    assignment: ReviewAssignment, run: GradingRun, data: ReviewInput, total: float
) -> Review:
    assert assignment.reviewer_id is not None  # a claimed slot always has its reviewer
    try:
        with transaction.atomic():
            return Review.objects.create(
                assignment=assignment,
                submission=assignment.submission,
                reviewer_id=assignment.reviewer_id,
                grading_run=run,
                decision=data.decision,
                feedback=data.feedback.strip(),
                score=total,
            )
    except IntegrityError:
        raise Conflict("you have already reviewed this submission") from None


def _lock_submission(submission_id: int) -> Submission:
    """Every write that touches one submission's reviews locks the submission row
    first, then the review row it changes: one order, so writers never deadlock,
    and two reviews arriving at once combine one after the other."""
    return (
        Submission.objects.select_for_update(of=("self",))
        .select_related("task_version__task")
        .get(pk=submission_id)
    )


def _lock_item(assignment_id: int) -> tuple[Submission, ReviewAssignment]:
    submission_id = (
        ReviewAssignment.objects.filter(pk=assignment_id)
        .values_list("submission_id", flat=True)
        .first()
    )
    if submission_id is None:
        raise Conflict("no such item")
    submission = _lock_submission(submission_id)
    assignment = ReviewAssignment.objects.select_for_update().get(pk=assignment_id)
    assignment.submission = submission
    return submission, assignment


def _take_for_submit(assignment: ReviewAssignment, reviewer: User) -> None:
    """The reviewer's claim, even past its expiry as long as nobody else has taken
    the item since: a late review is better than a lost one."""
    if assignment.status == AssignmentStatus.CLAIMED and assignment.reviewer_id == reviewer.pk:
        return
    if assignment.status == AssignmentStatus.OPEN and access.may_review(
        reviewer, assignment.submission
    ):
        if selectors.has_taken(reviewer, assignment.submission_id):
            raise Conflict("you already hold or reviewed this submission")
        _claim(assignment, reviewer)
        assignment.refresh_from_db()
        return
    raise Conflict("your claim on this item expired and it went to another reviewer")


def _check_decision(data: ReviewInput) -> None:
    if data.decision not in Decision.values:
        raise ReviewError(f"decision must be one of {', '.join(Decision.values)}")
    if not data.feedback.strip():
        raise ReviewError("write the overall feedback")
    if len(data.feedback) > MAX_FEEDBACK_CHARS:
        raise ReviewError(f"feedback is limited to {MAX_FEEDBACK_CHARS} characters")


def _score_rows(
    criteria: Sequence[Criterion],
    automatic: Mapping[str, CriterionScore],
    data: ReviewInput,
) -> tuple[list[ReviewScore], float]:
    """One ReviewScore per criterion, and the review's rubric total."""
    unknown = sorted(set(data.scores) - {c.key for c in criteria})
    if unknown:
        raise ReviewError(f"no such criterion: {', '.join(unknown)}")
    rows = []
    for criterion in criteria:
        given = data.scores.get(criterion.key, ScoreInput())
        if len(given.comment) > MAX_COMMENT_CHARS or len(given.reason) > MAX_COMMENT_CHARS:
            raise ReviewError(f"{criterion.key}: comments are limited to {MAX_COMMENT_CHARS}")
        if criterion.kind == CriterionKind.HUMAN:
            rows.append(_human_row(criterion, given))
        else:
            rows.append(_automatic_row(criterion, automatic.get(criterion.key), given))
    awarded = {row.criterion.key: row.points for row in rows}
    return rows, rubric_total(criteria, awarded)


def _human_row(criterion: Criterion, given: ScoreInput) -> ReviewScore:
    levels = [float(level["score"]) for level in criterion.levels]
    if given.level is None:
        raise ReviewError(f"{criterion.key}: choose a level")
    if float(given.level) not in levels:
        allowed = ", ".join(f"{score:g}" for score in levels)
        raise ReviewError(f"{criterion.key}: the level must be one of {allowed}")
    if given.overturned:
        raise ReviewError(f"{criterion.key}: only automatic criteria can be overturned")
    return ReviewScore(criterion=criterion, points=float(given.level), comment=given.comment)


def _automatic_row(
    criterion: Criterion, automatic: CriterionScore | None, given: ScoreInput
) -> ReviewScore:
    if given.level is not None:
        raise ReviewError(f"{criterion.key}: an automatic criterion takes no level")
    met = bool(automatic.met) if automatic is not None else False
    points = automatic.points if automatic is not None else 0.0
    if given.overturned:
        if not given.reason.strip():
            raise ReviewError(f"{criterion.key}: say why the automatic result is wrong")
        return ReviewScore(
            criterion=criterion,
            points=scoring.flipped_points(criterion_points=criterion.points, met=met),
            automatic_points=points,
            overturned=True,
            overturn_reason=given.reason.strip(),
            comment=given.comment,
        )
    return ReviewScore(
        criterion=criterion, points=points, automatic_points=points, comment=given.comment
    )


def _comment_rows(submission: Submission, comments: Sequence[CommentInput]) -> list[LineComment]:
    if len(comments) > MAX_LINE_COMMENTS:
        raise ReviewError(f"at most {MAX_LINE_COMMENTS} line comments")
    files = selectors.submission_lines(submission)
    rows = []
    for comment in comments:
        lines = files.get(comment.path)
        if lines is None:
            raise ReviewError(f"no file {comment.path!r} in this submission")
        if not 1 <= comment.line <= max(len(lines), 1):
            raise ReviewError(f"{comment.path} has no line {comment.line}")
        body = comment.body.strip()
        if not body or len(body) > MAX_COMMENT_CHARS:
            raise ReviewError(
                f"{comment.path}:{comment.line}: write 1 to {MAX_COMMENT_CHARS} characters"
            )
        line_text = lines[comment.line - 1] if lines else ""
        rows.append(
            LineComment(path=comment.path, line=comment.line, line_text=line_text, body=body)
        )
    return rows


def _save_parts(review: Review, scores: list[ReviewScore], comments: list[LineComment]) -> None:
    for row in scores:
        row.review = review
    for comment in comments:
        comment.review = review
    ReviewScore.objects.bulk_create(scores)
    LineComment.objects.bulk_create(comments)


def review_edit(*, review_id: int, editor: User, data: ReviewInput) -> Review:
    """Change a submitted review while the submission's outcome is still open
    (collecting reviews, or waiting for adjudication). Recorded with before and after."""
    with transaction.atomic():
        submission_id = Review.objects.values_list("submission_id", flat=True).get(pk=review_id)
        submission = _lock_submission(submission_id)
        review = Review.objects.select_for_update().get(pk=review_id)
        if review.reviewer_id != editor.pk:
            raise NotAllowed("only its reviewer edits a review")
        outcome = ReviewOutcome.objects.filter(submission=submission).first()
        run = selectors.latest_run(submission)
        if outcome is None or outcome.status == OutcomeStatus.FINAL or run is None:
            raise Conflict("the outcome is final: this review can no longer change")
        if review.grading_run_id != run.pk:
            raise Conflict("this review is of an earlier grading")
        before = selectors.review_snapshot(review)
        criteria = selectors.criteria_of(submission)
        rows, total = _score_rows(criteria, selectors.automatic_scores(run), data)
        _check_decision(data)
        comments = _comment_rows(submission, data.comments)
        review.scores.all().delete()
        review.line_comments.all().delete()
        review.decision = data.decision
        review.feedback = data.feedback.strip()
        review.score = total
        review.save(update_fields=["decision", "feedback", "score", "updated_at"])
        _save_parts(review, rows, comments)
        audit(
            actor=editor,
            verb="review.edited",
            target=review,
            submission_id=submission.pk,
            before=before,
            after=selectors.review_snapshot(review),
        )
        _outcome_update(submission, actor=editor)
    return review


# Outcomes -------------------------------------------------------------------------------------


def _outcome_update(submission: Submission, *, actor: User) -> ReviewOutcome:
    """Recombine the current round's reviews; finalise or send to adjudication once
    every required review is in. The caller holds the submission's row lock."""
    outcome, _ = ReviewOutcome.objects.select_for_update().get_or_create(submission=submission)
    reviews = list(selectors.current_reviews(submission))
    policy = selectors.policy_for(submission.task_version.task)
    result = scoring.consensus(
        [r.decision for r in reviews], [r.score for r in reviews], policy.disagreement_threshold
    )
    stats = {
        "score": result.score,
        "score_spread": result.spread,
        "score_stdev": result.stdev,
        "review_count": len(reviews),
    }
    if len(reviews) < max(policy.reviews_required, 1):
        ReviewOutcome.objects.filter(pk=outcome.pk).update(**stats, updated_at=timezone.now())
    elif result.decision is None:
        _to_adjudication(outcome, stats, rule=result.rule, actor=actor)
    else:
        _finalise(outcome, reviews, stats | {"decision": result.decision, "rule": result.rule})
        audit(
            actor=actor,
            verb="outcome.finalized",
            target=outcome,
            submission_id=submission.pk,
            before={"status": outcome.status},
            after=_outcome_data(outcome.pk),
        )
    outcome.refresh_from_db()
    return outcome


def _to_adjudication(
    outcome: ReviewOutcome, stats: dict[str, Any], *, rule: str, actor: User
) -> None:
    if outcome.status == OutcomeStatus.ADJUDICATION:
        ReviewOutcome.objects.filter(pk=outcome.pk).update(
            **stats, rule=rule, updated_at=timezone.now()
        )
        return
    transition(
        ReviewOutcome.objects,
        outcome.pk,
        to=OutcomeStatus.ADJUDICATION,
        allowed=OUTCOME_TRANSITIONS,
        rule=rule,
        **stats,
    )
    audit(
        actor=actor,
        verb="outcome.adjudication_needed",
        target=outcome,
        submission_id=outcome.submission_id,
        before={"status": outcome.status},
        after=_outcome_data(outcome.pk),
    )


def _finalise(outcome: ReviewOutcome, reviews: Sequence[Review], values: dict[str, Any]) -> None:
    """final, the consensus criterion scores written, the submission reviewed, and
    the submitter's webhook fired once the transaction commits."""
    transition(
        ReviewOutcome.objects,
        outcome.pk,
        to=OutcomeStatus.FINAL,
        allowed=OUTCOME_TRANSITIONS,
        finalized_at=timezone.now(),
        **values,
    )
    _write_consensus_scores(outcome.submission_id, reviews)
    submission_services.submission_set_status(
        submission_id=outcome.submission_id,
        to=SubmissionStatus.REVIEWED,
        from_=SubmissionStatus.AWAITING_REVIEW,
    )
    submission_id = outcome.submission_id
    _cancel_open_slots(Submission(pk=submission_id))
    send_on_commit(submission_reviewed, sender=ReviewOutcome, submission_id=submission_id)


def _write_consensus_scores(submission_id: int, reviews: Sequence[Review]) -> None:
    """Human-source CriterionScores: each human criterion's mean, and each automatic
    criterion that some reviewer overturned, so rubric readers see the final points."""
    CriterionScore.objects.filter(
        submission_id=submission_id, source=ScoreSource.HUMAN, grading_run__isnull=True
    ).delete()
    by_criterion: dict[int, list[ReviewScore]] = {}
    for row in ReviewScore.objects.filter(review__in=reviews).select_related("criterion"):
        by_criterion.setdefault(row.criterion_id, []).append(row)
    consensus = []
    for rows in by_criterion.values():
        criterion = rows[0].criterion
        overturns = sum(1 for r in rows if r.overturned)
        if criterion.kind == CriterionKind.AUTOMATIC and not overturns:
            continue
        detail = (
            f"overturned by {overturns} of {len(rows)} reviewer(s)"
            if criterion.kind == CriterionKind.AUTOMATIC
            else f"mean of {len(rows)} review(s)"
        )
        consensus.append(
            CriterionScore(
                submission_id=submission_id,
                criterion=criterion,
                source=ScoreSource.HUMAN,
                points=sum(r.points for r in rows) / len(rows),
                detail=detail,
            )
        )
    CriterionScore.objects.bulk_create(consensus)


def _outcome_data(outcome_id: int) -> dict[str, Any]:
    outcome = ReviewOutcome.objects.get(pk=outcome_id)
    return {
        "status": outcome.status,
        "decision": outcome.decision,
        "rule": outcome.rule,
        "score": outcome.score,
        "score_spread": outcome.score_spread,
        "review_count": outcome.review_count,
        "adjudicated_by": outcome.adjudicated_by_id,
        "adjudication_reason": outcome.adjudication_reason,
    }


def adjudication_decide(
    *,
    outcome_id: int,
    adjudicator: User,
    decision: str,
    reason: str,
    score: float | None = None,
) -> ReviewOutcome:
    """A senior reviewer's final decision on reviews that disagree, with a reason."""
    if not access.is_senior(adjudicator):
        raise NotAllowed("only senior reviewers and admins adjudicate")
    if decision not in OutcomeDecision.values:
        raise ReviewError(f"decision must be one of {', '.join(OutcomeDecision.values)}")
    if not reason.strip():
        raise ReviewError("give the reason for the decision")
    if score is not None and not 0.0 <= score <= 1.0:
        raise ReviewError("a final score lies between 0 and 1")
    with transaction.atomic():
        submission_id = ReviewOutcome.objects.values_list("submission_id", flat=True).get(
            pk=outcome_id
        )
        submission = _lock_submission(submission_id)
        outcome = ReviewOutcome.objects.select_for_update().get(pk=outcome_id)
        if not selectors.may_adjudicate(adjudicator, submission):
            raise NotAllowed("you reviewed this submission, wrote its task or submitted it")
        if outcome.status != OutcomeStatus.ADJUDICATION:
            raise Conflict("this submission is not waiting for adjudication")
        before = _outcome_data(outcome.pk)
        reviews = list(selectors.current_reviews(submission))
        _finalise(
            outcome,
            reviews,
            {
                "decision": decision,
                "rule": scoring.RULE_ADJUDICATED,
                "score": score if score is not None else outcome.score,
                "adjudicated_by": adjudicator,
                "adjudication_reason": reason.strip(),
                "adjudicated_at": timezone.now(),
            },
        )
        audit(
            actor=adjudicator,
            verb="adjudication.decided",
            target=outcome,
            submission_id=submission.pk,
            before=before,
            after=_outcome_data(outcome.pk),
        )
    outcome.refresh_from_db()
    return outcome


# Pairwise -------------------------------------------------------------------------------------


def pair_offer_next(*, reviewer: User) -> PairOffer | None:
    """The reviewer's open pair, or a new informative one (see selectors.next_pair)."""
    if not access.is_reviewer(reviewer):
        raise NotAllowed("only reviewers judge pairs")
    with transaction.atomic():
        User.objects.select_for_update().filter(pk=reviewer.pk).first()
        current = PairOffer.objects.filter(
            reviewer=reviewer, judgement__isnull=True, skipped_at__isnull=True
        ).first()
        if current is not None:
            return current
        pair = selectors.next_pair(reviewer)
        if pair is None:
            return None
        first, second = pair
        return PairOffer.objects.create(
            reviewer=reviewer,
            task_version_id=first.task_version_id,
            submission_a=first,
            submission_b=second,
        )


@dataclass(frozen=True)
class PairInput:
    winner: str
    criterion_winners: Mapping[str, str]
    reason: str


def pairwise_judge(*, offer_id: Any, reviewer: User, data: PairInput) -> PairwiseJudgement:
    """Record which of the offered pair is better, overall and per human criterion."""
    with transaction.atomic():
        offer = PairOffer.objects.select_for_update().filter(pk=offer_id).first()
        if offer is None or offer.reviewer_id != reviewer.pk:
            raise NotAllowed("this pair was not offered to you")
        if not offer.is_open:
            raise Conflict("this pair was already judged or skipped")
        _check_pair_input(offer, data)
        judgement = PairwiseJudgement.objects.create(
            task_version_id=offer.task_version_id,
            submission_a_id=offer.submission_a_id,
            submission_b_id=offer.submission_b_id,
            winner=data.winner,
            criterion_winners=dict(data.criterion_winners),
            reason=data.reason.strip(),
            reviewer=reviewer,
        )
        PairOffer.objects.filter(pk=offer.pk).update(judgement=judgement, updated_at=timezone.now())
        audit(
            actor=reviewer,
            verb="pairwise.judged",
            target=judgement,
            after={
                "submission_a": judgement.submission_a_id,
                "submission_b": judgement.submission_b_id,
                "winner": judgement.winner,
                "criterion_winners": judgement.criterion_winners,
                "reason": judgement.reason,
            },
        )
    return judgement


def _check_pair_input(offer: PairOffer, data: PairInput) -> None:
    if data.winner not in Preference.values:
        raise ReviewError(f"winner must be one of {', '.join(Preference.values)}")
    if not data.reason.strip():
        raise ReviewError("say why")
    if len(data.reason) > MAX_FEEDBACK_CHARS:
        raise ReviewError(f"the reason is limited to {MAX_FEEDBACK_CHARS} characters")
    human = {
        c.key for c in selectors.criteria_of(offer.submission_a) if c.kind == CriterionKind.HUMAN
    }
    given = dict(data.criterion_winners)
    if set(given) != human:
        missing = ", ".join(sorted(human - set(given))) or "none"
        extra = ", ".join(sorted(set(given) - human)) or "none"
        raise ReviewError(f"judge every human criterion (missing: {missing}; unknown: {extra})")
    bad = sorted(key for key, value in given.items() if value not in Preference.values)
    if bad:
        raise ReviewError(f"per-criterion winners must be a, b or tie ({', '.join(bad)})")


def pair_offer_skip(*, offer_id: Any, reviewer: User) -> None:
    """Set an unjudged pair aside; it is not offered to this reviewer again."""
    skipped = PairOffer.objects.filter(
        pk=offer_id, reviewer=reviewer, judgement__isnull=True, skipped_at__isnull=True
    ).update(skipped_at=timezone.now(), updated_at=timezone.now())
    if not skipped:
        raise Conflict("no such open pair")


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None
