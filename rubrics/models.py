from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from benchwright.state import ImmutableVersionError, TimeStamped


class CriterionKind(models.TextChoices):
    AUTOMATIC = "automatic"
    HUMAN = "human"


class Rubric(TimeStamped):
    """The rubric of a task's draft (``task``) or of a frozen version (``version``)."""

    task = models.OneToOneField(
        "tasks.Task", null=True, blank=True, on_delete=models.CASCADE, related_name="rubric"
    )
    version = models.OneToOneField(
        "tasks.TaskVersion",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="rubric",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(task__isnull=False) & Q(version__isnull=True))
                | (Q(task__isnull=True) & Q(version__isnull=False)),
                name="rubric_belongs_to_draft_or_version",
            )
        ]

    def __str__(self) -> str:
        owner = self.task if self.task_id else self.version
        return f"rubric of {owner}"

    @property
    def positive_points(self) -> int:
        return sum(c.points for c in self.criteria.all() if c.points > 0)


class CriterionQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        if self.filter(rubric__version__isnull=False).exists():
            raise ImmutableVersionError("criteria of a frozen version cannot be changed")
        return super().update(**kwargs)


class Criterion(TimeStamped):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="criteria")
    key = models.CharField(
        max_length=60,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9._-]*$")],
        help_text="Stable id, kept across versions (a-z, 0-9, '.', '_', '-').",
    )
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    points = models.IntegerField(help_text="Signed: a negative number is a penalty.")
    kind = models.CharField(max_length=10, choices=CriterionKind.choices)
    rule = models.JSONField(default=dict, blank=True, help_text="For automatic criteria.")
    levels = models.JSONField(default=list, blank=True, help_text="For human criteria.")
    position = models.PositiveIntegerField(default=0)

    objects = CriterionQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "criteria"
        ordering = ["rubric", "position"]
        constraints = [
            models.UniqueConstraint(fields=["rubric", "key"], name="criterion_key_unique"),
            models.CheckConstraint(
                condition=Q(kind__in=CriterionKind.values), name="criterion_kind_valid"
            ),
            models.CheckConstraint(condition=~Q(points=0), name="criterion_points_nonzero"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.points:+d})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding and self.rubric.version_id is not None:
            raise ImmutableVersionError(f"criterion {self.key} belongs to a frozen version")
        super().save(*args, **kwargs)


class ScoreSource(models.TextChoices):
    AUTOMATIC = "automatic"
    HUMAN = "human"


class CriterionScore(TimeStamped):
    """Points one criterion awarded to one submission, by the grader or a reviewer."""

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.CASCADE, related_name="criterion_scores"
    )
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="scores")
    grading_run = models.ForeignKey(
        "submissions.GradingRun",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="criterion_scores",
    )
    source = models.CharField(max_length=10, choices=ScoreSource.choices)
    points = models.FloatField()
    met = models.BooleanField(null=True, help_text="Automatic rules: whether the rule held.")
    detail = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["grading_run", "criterion"],
                condition=Q(grading_run__isnull=False),
                name="one_automatic_score_per_run",
            ),
            models.CheckConstraint(
                condition=Q(source__in=ScoreSource.values), name="score_source_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.criterion.key}: {self.points}"
