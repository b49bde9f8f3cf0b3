from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchwright.state import ImmutableVersionError, TimeStamped
from graders.filetext import file_bytes

# A task's kind names its grader. The list of kinds is the grading registry's
# (graders.registry, the only one in the code); the database checks only that a kind
# looks like a name, so that registering a kind needs no migration.
DEFAULT_KIND = "kernel"
KIND_NAME = r"^[a-z][a-z0-9_-]*$"


def kind_choices() -> list[tuple[str, str]]:
    """(name, label) of every registered task kind: model, form and API choices."""
    from graders import registry

    return registry.choices()


class Difficulty(models.TextChoices):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


class Hardware(models.TextChoices):
    CPU = "cpu", "CPU"
    A100 = "a100", "NVIDIA A100"
    H100 = "h100", "NVIDIA H100"
    H200 = "h200", "NVIDIA H200"
    B200 = "b200", "NVIDIA B200"
    L40S = "l40s", "NVIDIA L40S"
    MI300X = "mi300x", "AMD MI300X"


class TaskStatus(models.TextChoices):
    DRAFT = "draft"
    IN_REVIEW = "in_review", "In review"
    PUBLISHED = "published"
    RETIRED = "retired"


# The one place that says which status may follow which.
TASK_TRANSITIONS: dict[str, frozenset[str]] = {
    TaskStatus.DRAFT: frozenset({TaskStatus.IN_REVIEW}),
    TaskStatus.IN_REVIEW: frozenset({TaskStatus.DRAFT, TaskStatus.PUBLISHED}),
    # A published task can be revised (its versions stay frozen) or retired.
    TaskStatus.PUBLISHED: frozenset({TaskStatus.DRAFT, TaskStatus.RETIRED}),
    TaskStatus.RETIRED: frozenset({TaskStatus.DRAFT}),
}


class Visibility(models.TextChoices):
    PROMPT = "prompt", "Shown to solvers"
    HIDDEN = "hidden", "Kept for grading"


class FileRole(models.TextChoices):
    STATEMENT = "statement"
    REFERENCE = "reference"
    SOLUTION = "solution"
    NEGATIVE = "negative"
    TEST = "test"
    STARTER = "starter"
    ARTIFACT = "artifact"
    OTHER = "other"


class Task(TimeStamped):
    """An evaluation task as its author edits it (the draft). Published content
    lives in immutable TaskVersions."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=kind_choices, default=DEFAULT_KIND)
    statement = models.TextField(blank=True, help_text="Markdown, shown to solvers.")
    difficulty = models.CharField(
        max_length=10, choices=Difficulty.choices, default=Difficulty.MEDIUM
    )
    tags = models.JSONField(default=list, blank=True)
    hardware = models.CharField(max_length=20, choices=Hardware.choices, default=Hardware.CPU)
    grading = models.JSONField(default=dict, blank=True, help_text="The [grading] table.")
    status = models.CharField(max_length=20, choices=TaskStatus.choices, default=TaskStatus.DRAFT)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_tasks"
    )
    current_version = models.ForeignKey(
        "TaskVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The published version solvers get.",
    )

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=TaskStatus.values), name="task_status_valid"
            ),
            models.CheckConstraint(condition=Q(kind__regex=KIND_NAME), name="task_kind_name"),
            models.CheckConstraint(
                condition=Q(difficulty__in=Difficulty.values), name="task_difficulty_valid"
            ),
        ]
        indexes = [
            # The catalog list: published tasks of a kind.
            models.Index(fields=["status", "kind"], name="task_status_kind"),
        ]

    def __str__(self) -> str:
        return self.slug


class FrozenQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        raise ImmutableVersionError("task versions are immutable; create a new version")


class TaskVersion(models.Model):
    """A frozen snapshot of a task: what submissions pin and graders grade."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=kind_choices)
    statement = models.TextField(blank=True)
    difficulty = models.CharField(max_length=10, choices=Difficulty.choices)
    tags = models.JSONField(default=list, blank=True)
    hardware = models.CharField(max_length=20, choices=Hardware.choices)
    grading = models.JSONField(default=dict, blank=True)
    manifest = models.TextField(
        blank=True, help_text="task.toml as imported, or as edited since (layout kept)."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now_add=True)

    objects = FrozenQuerySet.as_manager()

    class Meta:
        ordering = ["task", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="version_number_unique"),
            models.UniqueConstraint(fields=["task", "content_hash"], name="version_hash_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug}@v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ImmutableVersionError(f"{self} is frozen; create a new version instead")
        super().save(*args, **kwargs)


class TaskFileQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        if self.filter(version__isnull=False).exists():
            raise ImmutableVersionError("files of a frozen version cannot be changed")
        return super().update(**kwargs)


class TaskFile(TimeStamped):
    """A file of a task's draft (``task`` set) or of a frozen version (``version`` set)."""

    task = models.ForeignKey(
        Task, null=True, blank=True, on_delete=models.CASCADE, related_name="files"
    )
    version = models.ForeignKey(
        TaskVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="files"
    )
    path = models.CharField(max_length=255)
    content = models.TextField(blank=True)
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.HIDDEN
    )
    role = models.CharField(max_length=20, choices=FileRole.choices, default=FileRole.OTHER)
    expected_verdict = models.CharField(
        max_length=40, blank=True, help_text="For negative examples: the verdict they must get."
    )
    note = models.TextField(blank=True)
    sha256 = models.CharField(max_length=64, blank=True)

    objects = TaskFileQuerySet.as_manager()

    class Meta:
        ordering = ["path"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(task__isnull=False) & Q(version__isnull=True))
                | (Q(task__isnull=True) & Q(version__isnull=False)),
                name="taskfile_belongs_to_draft_or_version",
            ),
            models.UniqueConstraint(
                fields=["task", "path"], condition=Q(task__isnull=False), name="draft_path_unique"
            ),
            models.UniqueConstraint(
                fields=["version", "path"],
                condition=Q(version__isnull=False),
                name="version_path_unique",
            ),
            models.CheckConstraint(
                condition=Q(visibility__in=Visibility.values), name="taskfile_visibility_valid"
            ),
            models.CheckConstraint(
                condition=Q(role__in=FileRole.values), name="taskfile_role_valid"
            ),
            models.CheckConstraint(
                condition=~Q(role=FileRole.NEGATIVE) | ~Q(expected_verdict=""),
                name="negative_has_expected_verdict",
            ),
        ]

    def __str__(self) -> str:
        return self.path

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.version_id is not None and not self._state.adding:
            raise ImmutableVersionError(f"{self.path} belongs to a frozen version")
        self.sha256 = hashlib.sha256(file_bytes(self.path, self.content)).hexdigest()
        super().save(*args, **kwargs)


class ValidationStatus(models.TextChoices):
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"


VALIDATION_TRANSITIONS: dict[str, frozenset[str]] = {
    ValidationStatus.RUNNING: frozenset({ValidationStatus.PASSED, ValidationStatus.FAILED}),
    ValidationStatus.PASSED: frozenset(),
    ValidationStatus.FAILED: frozenset(),
}


class ValidationRun(TimeStamped):
    """Grading a draft's expert solution and every negative example through the
    real queue. A task goes to review only when a run over its current content passed."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="validation_runs")
    content_hash = models.CharField(max_length=64, help_text="The draft content validated.")
    status = models.CharField(
        max_length=10, choices=ValidationStatus.choices, default=ValidationStatus.RUNNING
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=ValidationStatus.values), name="validation_status_valid"
            )
        ]
        indexes = [
            # "Has this exact draft content passed validation?"
            models.Index(fields=["task", "content_hash", "status"], name="validation_lookup"),
        ]

    def __str__(self) -> str:
        return f"validation {self.pk} of {self.task.slug}: {self.status}"


class ValidationResult(TimeStamped):
    """One file of a validation run: the verdict it got against the one it must get."""

    run = models.ForeignKey(ValidationRun, on_delete=models.CASCADE, related_name="results")
    path = models.CharField(max_length=255)
    role = models.CharField(max_length=20, choices=FileRole.choices)
    expected_verdict = models.CharField(max_length=40)
    verdict = models.CharField(max_length=40, blank=True, help_text="Empty while grading.")
    report = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run", "path"]
        constraints = [
            models.UniqueConstraint(fields=["run", "path"], name="validation_result_path_unique")
        ]

    def __str__(self) -> str:
        return f"{self.path}: {self.verdict or 'pending'} (expected {self.expected_verdict})"

    @property
    def done(self) -> bool:
        return bool(self.verdict)

    @property
    def passed(self) -> bool:
        return self.verdict == self.expected_verdict


# --- task review -------------------------------------------------------------------------------


class ReviewDecision(models.TextChoices):
    APPROVED = "approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"


class TaskReview(TimeStamped):
    """A reviewer's decision on a draft in review. It keeps the draft as it was
    reviewed, so the next review can show what changed since."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="task_reviews"
    )
    decision = models.CharField(max_length=20, choices=ReviewDecision.choices)
    comment = models.TextField(blank=True, help_text="The overall comment, shown to the author.")
    content_hash = models.CharField(max_length=64, help_text="The draft content reviewed.")
    manifest = models.TextField(blank=True, help_text="The reviewed draft's task.toml.")
    files = models.JSONField(
        default=dict, blank=True, help_text="The reviewed draft's files: path -> text."
    )
    version = models.ForeignKey(
        TaskVersion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reviews",
        help_text="The version an approval published.",
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=ReviewDecision.values), name="task_review_decision_valid"
            )
        ]
        indexes = [
            # "The last review of this task": the diff base and the author's feedback.
            models.Index(fields=["task", "-created_at"], name="task_review_latest"),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug}: {self.decision} by {self.reviewer}"


class TaskReviewComment(TimeStamped):
    """A reviewer's comment on one line of a draft file. Pending (no ``review``)
    until the reviewer decides; then it belongs to that review."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="review_comments")
    review = models.ForeignKey(
        TaskReview, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="task_review_comments"
    )
    path = models.CharField(max_length=255)
    line = models.PositiveIntegerField(help_text="1-based line of the file as reviewed.")
    line_text = models.TextField(blank=True, help_text="That line, kept as it read.")
    content_hash = models.CharField(max_length=64, help_text="The draft content commented on.")
    body = models.TextField()

    class Meta:
        ordering = ["path", "line", "created_at"]
        indexes = [
            # A reviewer's pending comments on a task, and a review's comments.
            models.Index(fields=["task", "review", "author"], name="task_review_comment_lookup"),
        ]

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.author})"
