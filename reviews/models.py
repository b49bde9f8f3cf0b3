"""Reviews of graded submissions: policy, claims, reviews, outcomes, pairwise
judgements and the audit trail.

A submission that enters review gets one ``ReviewAssignment`` per review its
task's policy requires. An assignment is a slot in the queue: reviewers claim
slots (a row lock, so two reviewers never take the same one), and a submitted
review fills one. ``ReviewOutcome`` combines the reviews of the current
grading run into the submission's decision and score.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from benchwright.state import TimeStamped

SENIOR_REVIEWER = "senior_reviewer"
DEFAULT_CLAIM_MINUTES = 30
DEFAULT_DISAGREEMENT_THRESHOLD = 0.3


class ReviewPolicy(TimeStamped):
    """How a task's submissions are reviewed. A task without a row gets the defaults."""

    task = models.OneToOneField(
        "tasks.Task", on_delete=models.CASCADE, related_name="review_policy"
    )
    reviews_required = models.PositiveSmallIntegerField(
        default=1,
        validators=[MaxValueValidator(5)],
        help_text="Independent reviews per submission; 0 turns review off for the task.",
    )
    claim_minutes = models.PositiveSmallIntegerField(
        default=DEFAULT_CLAIM_MINUTES,
        validators=[MinValueValidator(1), MaxValueValidator(24 * 60)],
        help_text="How long a claim holds before the item returns to the queue.",
    )
    review_failures = models.BooleanField(
        default=False,
        help_text=(
            "Also queue submissions that were not accepted (wrong answers, errors, "
            "integrity findings). Off: reviewers see accepted submissions only."
        ),
    )
    disagreement_threshold = models.FloatField(
        default=DEFAULT_DISAGREEMENT_THRESHOLD,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Reviews whose rubric totals differ by more than this go to adjudication.",
    )

    class Meta:
        verbose_name_plural = "review policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(reviews_required__lte=5), name="review_policy_required_max"
            ),
            models.CheckConstraint(
                condition=Q(disagreement_threshold__gte=0) & Q(disagreement_threshold__lte=1),
                name="review_policy_threshold_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task}: {self.reviews_required} review(s)"


class AssignmentStatus(models.TextChoices):
    OPEN = "open"
    CLAIMED = "claimed"
    SUBMITTED = "submitted"
    CANCELLED = "cancelled"


# The one place that says which status may follow which.
ASSIGNMENT_TRANSITIONS: dict[str, frozenset[str]] = {
    AssignmentStatus.OPEN: frozenset({AssignmentStatus.CLAIMED, AssignmentStatus.CANCELLED}),
    # claimed -> open: the claim expired or was released.
    AssignmentStatus.CLAIMED: frozenset(
        {AssignmentStatus.OPEN, AssignmentStatus.SUBMITTED, AssignmentStatus.CANCELLED}
    ),
    AssignmentStatus.SUBMITTED: frozenset(),
    AssignmentStatus.CANCELLED: frozenset(),
}


class ReviewAssignment(TimeStamped):
    """One review slot of a submission; the reviewer is set while claimed and once submitted."""

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="review_assignments"
    )
    slot = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=12, choices=AssignmentStatus.choices, default=AssignmentStatus.OPEN
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="review_assignments",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "slot"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "slot"], name="assignment_slot_unique"),
            # A reviewer holds at most one slot of a submission.
            models.UniqueConstraint(
                fields=["submission", "reviewer"],
                condition=Q(reviewer__isnull=False),
                name="assignment_reviewer_once",
            ),
            models.CheckConstraint(
                condition=Q(status__in=AssignmentStatus.values), name="assignment_status_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status__in=[AssignmentStatus.CLAIMED, AssignmentStatus.SUBMITTED])
                | Q(reviewer__isnull=False),
                name="assignment_claimed_has_reviewer",
            ),
        ]
        indexes = [
            # The queue: claimable slots, oldest first.
            models.Index(fields=["status", "created_at"], name="assignment_queue"),
            # A reviewer's active claim and load.
            models.Index(fields=["reviewer", "status"], name="assignment_reviewer"),
        ]

    def __str__(self) -> str:
        return f"slot {self.slot} of submission {self.submission_id}: {self.status}"


class Decision(models.TextChoices):
    """A reviewer's decision on one submission."""

    ACCEPT = "accept"
    REJECT = "reject"
    NEEDS_FIX = "needs_fix", "Needs fix"


class Review(TimeStamped):
    """One reviewer's judgement of one submission, as graded by ``grading_run``."""

    assignment = models.OneToOneField(
        ReviewAssignment, on_delete=models.CASCADE, related_name="review"
    )
    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="reviews"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submission_reviews"
    )
    grading_run = models.ForeignKey(
        "submissions.GradingRun", on_delete=models.CASCADE, related_name="reviews"
    )
    decision = models.CharField(max_length=12, choices=Decision.choices)
    feedback = models.TextField(help_text="Overall written feedback.")
    score = models.FloatField(help_text="This review's rubric total, in [0, 1].")

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            # No reviewer reviews the same submission twice.
            models.UniqueConstraint(fields=["submission", "reviewer"], name="review_once"),
            models.CheckConstraint(
                condition=Q(decision__in=Decision.values), name="review_decision_valid"
            ),
            models.CheckConstraint(
                condition=Q(score__gte=0) & Q(score__lte=1), name="review_score_range"
            ),
        ]
        indexes = [
            # Throughput: a reviewer's reviews by day.
            models.Index(fields=["reviewer", "created_at"], name="review_reviewer_created"),
        ]

    def __str__(self) -> str:
        return f"review {self.pk} of submission {self.submission_id}: {self.decision}"


class ReviewScore(TimeStamped):
    """Points one review gives one criterion. Human criteria: the chosen level's
    score. Automatic criteria: the grader's points, flipped when overturned."""

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="scores")
    criterion = models.ForeignKey(
        "rubrics.Criterion", on_delete=models.PROTECT, related_name="review_scores"
    )
    points = models.FloatField()
    comment = models.TextField(blank=True)
    automatic_points = models.FloatField(
        null=True, blank=True, help_text="Automatic criteria: what the grader awarded."
    )
    overturned = models.BooleanField(default=False)
    overturn_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["criterion__position"]
        constraints = [
            models.UniqueConstraint(fields=["review", "criterion"], name="review_score_once"),
            models.CheckConstraint(
                condition=Q(overturned=False) | ~Q(overturn_reason=""),
                name="overturn_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.criterion.key}: {self.points}"


class LineComment(TimeStamped):
    """A review comment anchored to one line of one submission file."""

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="line_comments")
    path = models.CharField(max_length=255)
    line = models.PositiveIntegerField(help_text="1-based.")
    line_text = models.TextField(blank=True, help_text="The line as it read.")
    body = models.TextField()

    class Meta:
        ordering = ["path", "line", "pk"]
        constraints = [models.CheckConstraint(condition=Q(line__gte=1), name="comment_line_min")]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class OutcomeStatus(models.TextChoices):
    PENDING = "pending", "Collecting reviews"
    ADJUDICATION = "adjudication", "Awaiting adjudication"
    FINAL = "final"


OUTCOME_TRANSITIONS: dict[str, frozenset[str]] = {
    OutcomeStatus.PENDING: frozenset({OutcomeStatus.ADJUDICATION, OutcomeStatus.FINAL}),
    # adjudication -> final: a senior reviewer decided, or an edited review resolved
    # the disagreement; -> pending: a regrade starts a new round.
    OutcomeStatus.ADJUDICATION: frozenset({OutcomeStatus.FINAL, OutcomeStatus.PENDING}),
    # A final outcome is final; only a regrade (a new round of reviews) reopens it.
    OutcomeStatus.FINAL: frozenset({OutcomeStatus.PENDING}),
}


class OutcomeDecision(models.TextChoices):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    NEEDS_FIX = "needs_fix", "Needs fix"


class ReviewOutcome(TimeStamped):
    """The combined result of a submission's reviews of its current grading run."""

    submission = models.OneToOneField(
        "submissions.Submission", on_delete=models.CASCADE, related_name="review_outcome"
    )
    status = models.CharField(
        max_length=14, choices=OutcomeStatus.choices, default=OutcomeStatus.PENDING
    )
    decision = models.CharField(max_length=12, choices=OutcomeDecision.choices, blank=True)
    rule = models.CharField(max_length=200, blank=True, help_text="Why this decision.")
    score = models.FloatField(null=True, blank=True, help_text="Mean of the reviews' totals.")
    score_spread = models.FloatField(null=True, blank=True, help_text="Max minus min total.")
    score_stdev = models.FloatField(null=True, blank=True)
    review_count = models.PositiveSmallIntegerField(default=0)
    finalized_at = models.DateTimeField(null=True, blank=True)
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="adjudications",
    )
    adjudication_reason = models.TextField(blank=True)
    adjudicated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=OutcomeStatus.values), name="outcome_status_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=OutcomeStatus.FINAL) | ~Q(decision=""),
                name="final_outcome_has_decision",
            ),
            models.CheckConstraint(
                condition=Q(adjudicated_by__isnull=True) | ~Q(adjudication_reason=""),
                name="adjudication_has_reason",
            ),
        ]
        indexes = [
            # The adjudication queue, oldest first.
            models.Index(fields=["status", "updated_at"], name="outcome_status_updated"),
        ]

    def __str__(self) -> str:
        return f"outcome of submission {self.submission_id}: {self.status} {self.decision}"


class Preference(models.TextChoices):
    A = "a", "A is better"
    B = "b", "B is better"
    TIE = "tie", "Tie"


class PairwiseJudgement(TimeStamped):
    """A reviewer's preference between two submissions to the same task version,
    overall and per human criterion. A and B are as the reviewer saw them."""

    task_version = models.ForeignKey(
        "tasks.TaskVersion", on_delete=models.CASCADE, related_name="pairwise_judgements"
    )
    submission_a = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="+"
    )
    submission_b = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="+"
    )
    winner = models.CharField(max_length=4, choices=Preference.choices)
    criterion_winners = models.JSONField(
        default=dict, blank=True, help_text="Human criterion key -> a, b or tie."
    )
    reason = models.TextField()
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="pairwise_judgements"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(winner__in=Preference.values), name="pairwise_winner_valid"
            ),
            models.CheckConstraint(
                condition=~Q(submission_a=models.F("submission_b")), name="pairwise_two_different"
            ),
        ]
        indexes = [
            # The preference export: judgements of a task version in order.
            models.Index(fields=["task_version", "created_at"], name="pairwise_version_created"),
        ]

    def __str__(self) -> str:
        return f"{self.submission_a_id} vs {self.submission_b_id}: {self.winner}"


class PairOffer(TimeStamped):
    """A pair shown to one reviewer in pairwise mode, until judged or skipped.
    Its random id is all the page and the API carry, so the pair stays blind."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pair_offers"
    )
    task_version = models.ForeignKey(
        "tasks.TaskVersion", on_delete=models.CASCADE, related_name="pair_offers"
    )
    submission_a = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="+"
    )
    submission_b = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="+"
    )
    judgement = models.OneToOneField(
        PairwiseJudgement,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="offer",
    )
    skipped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # At most one open pair per reviewer.
            models.UniqueConstraint(
                fields=["reviewer"],
                condition=Q(judgement__isnull=True, skipped_at__isnull=True),
                name="one_open_pair_per_reviewer",
            )
        ]
        indexes = [
            # Pairs already offered to a reviewer, never offered again.
            models.Index(fields=["reviewer", "submission_a", "submission_b"], name="pair_offered"),
        ]

    def __str__(self) -> str:
        return f"pair {self.submission_a_id}/{self.submission_b_id} for {self.reviewer_id}"

    @property
    def is_open(self) -> bool:
        return self.judgement_id is None and self.skipped_at is None


class AuditEvent(models.Model):
    """Who did what to which review object, and what changed. Append-only, so it
    has a ``created_at`` and no ``updated_at``."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="review_audit_events",
        help_text="Empty for the platform itself (e.g. the claim sweeper).",
    )
    verb = models.CharField(max_length=40)
    target_type = models.CharField(max_length=40)
    target_id = models.BigIntegerField()
    submission = models.ForeignKey(
        "submissions.Submission",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="review_audit_events",
    )
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # The history of one object.
            models.Index(fields=["target_type", "target_id"], name="audit_target"),
        ]

    def __str__(self) -> str:
        return f"{self.verb} {self.target_type} {self.target_id} by {self.actor_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("audit events are append-only")
        super().save(*args, **kwargs)
