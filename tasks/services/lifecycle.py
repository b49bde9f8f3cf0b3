"""Creating versions and moving a task through its statuses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from benchwright import roles
from benchwright.state import transition
from rubrics.models import Criterion, Rubric

from ..models import (
    TASK_TRANSITIONS,
    Task,
    TaskFile,
    TaskStatus,
    TaskVersion,
)
from .manifests import draft_manifest_text, task_draft_hash


class PermissionDenied(Exception):
    """The user may not do this to this task."""


def _rubric_create(rubric: Rubric, criteria: Iterable[tuple[int, Any]]) -> None:
    """Save ``rubric`` with copies of ``criteria`` (position, criterion-like) in one insert."""
    rubric.save()
    Criterion.objects.bulk_create(
        Criterion(
            rubric=rubric,
            key=c.key,
            title=c.title,
            description=c.description,
            points=c.points,
            kind=c.kind,
            rule=c.rule,
            levels=c.levels,
            position=position,
        )
        for position, c in criteria
    )


@transaction.atomic
def version_freeze(
    *, task: Task, user: User | None, manifest_text: str = ""
) -> tuple[TaskVersion, bool]:
    """Freeze the draft into a TaskVersion; the same content gives the same version.

    Returns ``(version, created)``.
    """
    task = Task.objects.select_for_update().get(pk=task.pk)
    digest = task_draft_hash(task)
    existing = task.versions.filter(content_hash=digest).first()
    if existing is not None:
        return existing, False
    # A draft edited in the UI keeps the text of the version it came from, edited.
    manifest_text = manifest_text or draft_manifest_text(task)
    last = task.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = TaskVersion.objects.create(
        task=task,
        number=last + 1,
        content_hash=digest,
        title=task.title,
        kind=task.kind,
        statement=task.statement,
        difficulty=task.difficulty,
        tags=list(task.tags),
        hardware=task.hardware,
        grading=task.grading,
        manifest=manifest_text,
        created_by=user,
    )
    TaskFile.objects.bulk_create(
        TaskFile(
            version=version,
            path=f.path,
            content=f.content,
            visibility=f.visibility,
            role=f.role,
            expected_verdict=f.expected_verdict,
            note=f.note,
            sha256=f.sha256,
        )
        for f in task.files.all()
    )
    draft_rubric = getattr(task, "rubric", None)
    if draft_rubric is not None:
        _rubric_create(
            Rubric(version=version), ((c.position, c) for c in draft_rubric.criteria.all())
        )
    return version, True


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PermissionDenied(message)


class NotValidated(Exception):
    """The draft has not passed validation in its current form."""


def task_submit_for_review(*, task: Task, user: User, require_validation: bool = True) -> None:
    """Send a draft to review. It must have passed validation as it is now; only a
    catalog import by an admin (validated by ``validate_tasks`` in CI) skips that."""
    _require(
        task.owner_id == user.pk or roles.is_admin(user),
        "only the task's author can send it to review",
    )
    if require_validation:
        from ..validation import validation_passed_for_draft

        if not validation_passed_for_draft(task):
            raise NotValidated(f"{task.slug}: validate the draft before sending it to review")
    elif not roles.is_admin(user):
        raise PermissionDenied("only an admin may send an unvalidated draft to review")
    transition(Task.objects, task.pk, to=TaskStatus.IN_REVIEW, allowed=TASK_TRANSITIONS)


def task_request_changes(*, task: Task, reviewer: User) -> None:
    _require(roles.has_role(reviewer, roles.REVIEWER), "only reviewers can request changes")
    # Only a task under review: a published task goes back to draft by its author's revise.
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.DRAFT,
        allowed=TASK_TRANSITIONS,
        from_=TaskStatus.IN_REVIEW,
    )


@transaction.atomic
def task_publish(*, task: Task, reviewer: User) -> TaskVersion:
    """Approve a task in review: freeze its draft and make that version current."""
    _require(roles.has_role(reviewer, roles.REVIEWER), "only reviewers can publish")
    _require(
        task.owner_id != reviewer.pk or roles.is_admin(reviewer),
        "authors cannot approve their own tasks",
    )
    version, _ = version_freeze(task=task, user=reviewer)
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.PUBLISHED,
        allowed=TASK_TRANSITIONS,
        current_version=version,
    )
    return version


def task_revise(*, task: Task, user: User) -> None:
    """Reopen a published or retired task as a draft; its versions stay frozen."""
    _require(task.owner_id == user.pk or roles.is_admin(user), "only the author can revise")
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.DRAFT,
        allowed=TASK_TRANSITIONS,
        from_={TaskStatus.PUBLISHED, TaskStatus.RETIRED},
    )


def task_retire(*, task: Task, user: User) -> None:
    _require(task.owner_id == user.pk or roles.is_admin(user), "only the author can retire")
    transition(Task.objects, task.pk, to=TaskStatus.RETIRED, allowed=TASK_TRANSITIONS)
