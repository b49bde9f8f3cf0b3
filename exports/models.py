"""Dataset exports: named definitions, their frozen versions, and snapshots built
from a version.

A definition is a name and an owner. Its content (filters, format, split policy,
seed, options) lives in ``DefinitionVersion`` rows, which never change: editing
a definition freezes a new version, and every snapshot keeps pointing at the
version it was built from.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchwright import roles
from benchwright.state import TimeStamped

EXPORTER = roles.EXPORTER  # the group whose members may define and run exports


class ExportFormat(models.TextChoices):
    SFT = "sft", "SFT: chat messages"
    PREFERENCE = "preference", "Preference pairs"
    RL = "rl", "RL prompts with verifier"
    CRITIQUE = "critique", "Critiques: reviews of solutions"


class ExportDefinition(TimeStamped):
    """A named export. ``current_version`` is what a new snapshot is built from."""

    slug = models.SlugField(max_length=80, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="export_definitions"
    )
    current_version = models.ForeignKey(
        "DefinitionVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["slug"]
        indexes = [
            # An exporter's own definitions.
            models.Index(fields=["owner", "slug"], name="export_definition_owner"),
        ]

    def __str__(self) -> str:
        return self.slug


class FrozenVersionError(Exception):
    """A definition version was about to change after being frozen."""


class FrozenQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        raise FrozenVersionError("definition versions are immutable; create a new version")


class DefinitionVersion(models.Model):
    """One frozen content of a definition. ``content_hash`` is SHA-256 over the
    canonical JSON of everything below it (see ``exports.spec``)."""

    definition = models.ForeignKey(
        ExportDefinition, on_delete=models.CASCADE, related_name="versions"
    )
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    format = models.CharField(max_length=20, choices=ExportFormat.choices)
    filters = models.JSONField(default=dict, blank=True)
    split = models.JSONField(help_text="Ratios: train, validation, test; they sum to 1.")
    seed = models.BigIntegerField(default=0)
    include_submitter = models.BooleanField(default=False)
    options = models.JSONField(default=dict, blank=True, help_text="Format options.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now_add=True)

    objects = FrozenQuerySet.as_manager()

    class Meta:
        ordering = ["definition", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["definition", "number"], name="definition_version_number_unique"
            ),
            models.UniqueConstraint(
                fields=["definition", "content_hash"], name="definition_version_hash_unique"
            ),
            models.CheckConstraint(
                condition=Q(format__in=ExportFormat.values), name="definition_format_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.definition.slug}@v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise FrozenVersionError(f"{self} is frozen; edit the definition instead")
        super().save(*args, **kwargs)


class SnapshotStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


# The one place that says which status may follow which.
SNAPSHOT_TRANSITIONS: dict[str, frozenset[str]] = {
    SnapshotStatus.QUEUED: frozenset({SnapshotStatus.RUNNING, SnapshotStatus.FAILED}),
    # running -> running: a build whose worker died (no progress for a while) is reclaimed.
    SnapshotStatus.RUNNING: frozenset(
        {SnapshotStatus.RUNNING, SnapshotStatus.SUCCEEDED, SnapshotStatus.FAILED}
    ),
    SnapshotStatus.SUCCEEDED: frozenset(),
    SnapshotStatus.FAILED: frozenset(),
}


class Snapshot(TimeStamped):
    """One build of a definition version: the dataset files under ``storage_prefix``
    and their tar.gz at ``archive_name``, both in the default storage."""

    version = models.ForeignKey(
        DefinitionVersion, on_delete=models.PROTECT, related_name="snapshots"
    )
    status = models.CharField(
        max_length=10, choices=SnapshotStatus.choices, default=SnapshotStatus.QUEUED
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="export_snapshots"
    )
    includes_submitter = models.BooleanField(
        default=False,
        help_text="Submitter identities are in the rows: the definition asked for them "
        "and the user who started the build may see them.",
    )
    items_total = models.PositiveBigIntegerField(default=0, help_text="Source items to read.")
    items_done = models.PositiveBigIntegerField(default=0)
    rows_written = models.PositiveBigIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    storage_prefix = models.CharField(max_length=255, blank=True)
    archive_name = models.CharField(max_length=255, blank=True)
    archive_sha256 = models.CharField(max_length=64, blank=True)
    archive_bytes = models.PositiveBigIntegerField(default=0)
    manifest = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=SnapshotStatus.values), name="snapshot_status_valid"
            )
        ]
        indexes = [
            # A definition's snapshots, newest first.
            models.Index(fields=["version", "created_at"], name="snapshot_version_created"),
            # Builds in a status (the worker's claim, stale builds).
            models.Index(fields=["status", "updated_at"], name="snapshot_status_updated"),
        ]

    def __str__(self) -> str:
        return f"snapshot {self.pk} of {self.version}: {self.status}"

    @property
    def finished(self) -> bool:
        return self.status in (SnapshotStatus.SUCCEEDED, SnapshotStatus.FAILED)

    @property
    def splits(self) -> list[dict[str, Any]]:
        """Rows and tasks per split, in split order (the stored manifest's keys are
        in the database's order)."""
        rows = (self.manifest or {}).get("rows") or {}
        tasks = (self.manifest or {}).get("tasks") or {}
        return [
            {"name": name, "rows": rows.get(name, 0), "tasks": tasks.get(name, 0)}
            for name in ("train", "validation", "test")
        ]

    @property
    def progress_percent(self) -> int:
        if self.status == SnapshotStatus.SUCCEEDED:
            return 100
        if not self.items_total:
            return 0
        return min(99, int(100 * self.items_done / self.items_total))


class LeftOutReason(models.TextChoices):
    DUPLICATE = "duplicate", "Duplicate of an exported row"
    HIDDEN_CONTENT = "hidden_content", "Quotes a hidden task file"
    SCORE_RANGE = "score_range", "Score outside the definition's range"


class LeftOutRow(TimeStamped):
    """An example of a row a build left out, and why: up to
    ``exports.build.EXAMPLES_PER_REASON`` per reason and snapshot (the manifest has
    the full counts). ``detail`` says where: the kept submission a duplicate
    repeats, the score and range, or where a text quotes which hidden file (its
    path and line numbers, never its content; pages show the path only to users
    who may see the task's hidden files)."""

    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="left_out")
    reason = models.CharField(max_length=20, choices=LeftOutReason.choices)
    task_version = models.ForeignKey(
        "tasks.TaskVersion", on_delete=models.CASCADE, related_name="+"
    )
    submission = models.ForeignKey(
        "submissions.Submission", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["snapshot", "reason", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reason__in=LeftOutReason.values), name="left_out_reason_valid"
            )
        ]
        indexes = [
            # A snapshot page's examples, by reason.
            models.Index(fields=["snapshot", "reason"], name="left_out_snapshot_reason"),
        ]

    def __str__(self) -> str:
        return f"{self.reason} in snapshot {self.snapshot_id}"
