from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchwright.state import TimeStamped


class SubmissionStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    FAILED = "failed", "Failed (not graded: a platform or task error)"
    AWAITING_REVIEW = "awaiting_review", "Awaiting review"
    REVIEWED = "reviewed"
    CANCELLED = "cancelled"


# The one place that says which status may follow which.
SUBMISSION_TRANSITIONS: dict[str, frozenset[str]] = {
    SubmissionStatus.QUEUED: frozenset({SubmissionStatus.RUNNING, SubmissionStatus.CANCELLED}),
    # running -> queued: an internal error is retried, or the sweeper re-enqueues stuck work.
    SubmissionStatus.RUNNING: frozenset(
        {SubmissionStatus.GRADED, SubmissionStatus.FAILED, SubmissionStatus.QUEUED}
    ),
    SubmissionStatus.GRADED: frozenset({SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.QUEUED}),
    SubmissionStatus.FAILED: frozenset({SubmissionStatus.QUEUED}),
    SubmissionStatus.AWAITING_REVIEW: frozenset(
        {SubmissionStatus.REVIEWED, SubmissionStatus.QUEUED}
    ),
    SubmissionStatus.REVIEWED: frozenset({SubmissionStatus.QUEUED}),
    SubmissionStatus.CANCELLED: frozenset(),
}


class Submission(TimeStamped):
    """A model-generated solution to one frozen TaskVersion."""

    task_version = models.ForeignKey(
        "tasks.TaskVersion", on_delete=models.PROTECT, related_name="submissions"
    )
    submitter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions"
    )
    model_name = models.CharField(max_length=200, blank=True)
    run_id = models.CharField(max_length=200, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=20, choices=SubmissionStatus.choices, default=SubmissionStatus.QUEUED
    )
    verdict = models.CharField(max_length=40, blank=True, help_text="Of the latest grading run.")
    code_key = models.BinaryField(
        max_length=16,
        null=True,
        editable=False,
        help_text="submissions.fingerprint.solution_key of the files, made once on arrival: "
        "equal for solutions that differ only in comments, whitespace, file names or order. "
        "Null where a row was written without the services; readers compute it then.",
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Grading attempts started.")
    status_changed_at = models.DateTimeField(null=True, blank=True)
    api_token = models.ForeignKey(
        "accounts.ApiToken",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="submissions",
        help_text="The API token it came through; its daily sandbox-time quota counts it.",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=SubmissionStatus.values), name="submission_status_valid"
            )
        ]
        indexes = [
            # The sweeper and the queues: submissions in a status, oldest first.
            models.Index(fields=["status", "created_at"], name="submission_status_created"),
            # API listing: a client's run.
            models.Index(fields=["submitter", "run_id"], name="submission_submitter_run"),
        ]

    def __str__(self) -> str:
        return f"submission {self.pk} to {self.task_version}"


class SubmissionFile(TimeStamped):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=255)
    content = models.TextField()

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "path"], name="submission_path_unique")
        ]

    def __str__(self) -> str:
        return self.path


class GradingRun(TimeStamped):
    """One grading of a submission: the verdict and the full report the grader returned."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="grading_runs"
    )
    attempt = models.PositiveIntegerField()
    verdict = models.CharField(max_length=40)
    reason = models.TextField(blank=True)
    report = models.JSONField(default=dict)
    hardware = models.CharField(max_length=100, blank=True, help_text="Where it ran.")
    target_hardware = models.BooleanField(default=False, help_text="Ran on the task's target.")
    harness_version = models.CharField(max_length=40, blank=True)
    timing_mode = models.CharField(max_length=20, blank=True)
    reference_median_s = models.FloatField(null=True, blank=True)
    submission_median_s = models.FloatField(null=True, blank=True)
    speedup = models.FloatField(null=True, blank=True)
    # The task kind's named metrics (graders.contract.TaskKind.metrics), read from the
    # report by the kind; the kernel columns above stay for the queries that sort by them.
    metrics = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "attempt"], name="one_run_per_attempt")
        ]

    def __str__(self) -> str:
        return f"run {self.attempt} of submission {self.submission_id}: {self.verdict}"
