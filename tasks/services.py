"""Every write to tasks: creation, status changes, freezing versions."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from benchwright import roles
from benchwright.state import transition
from rubrics.models import Criterion, Rubric

from .models import (
    TASK_TRANSITIONS,
    FileRole,
    Task,
    TaskFile,
    TaskStatus,
    TaskVersion,
)


class PermissionDenied(Exception):
    """The user may not do this to this task."""


def content_hash(manifest: dict[str, Any], files: dict[str, bytes]) -> str:
    """SHA-256 over a canonical JSON of the manifest and each file's path and SHA-256."""
    canonical = {
        "manifest": manifest,
        "files": sorted((path, hashlib.sha256(data).hexdigest()) for path, data in files.items()),
    }
    encoded = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


def draft_manifest(task: Task) -> dict[str, Any]:
    """The draft as the dict a task.toml would parse to (the files' content aside)."""
    files = list(task.files.all())
    statement = next((f.path for f in files if f.role == FileRole.STATEMENT), None)
    manifest: dict[str, Any] = {
        "slug": task.slug,
        "title": task.title,
        "kind": task.kind,
        "difficulty": task.difficulty,
        "tags": list(task.tags),
        "hardware": task.hardware,
    }
    if statement:
        manifest["statement"] = statement
    if task.grading:
        manifest["grading"] = task.grading
    manifest["files"] = [_file_entry(f) for f in files]
    rubric = getattr(task, "rubric", None)
    if rubric is not None:
        manifest["rubric"] = {"criteria": [_criterion_entry(c) for c in rubric.criteria.all()]}
    return manifest


def _file_entry(f: TaskFile) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": f.path, "visibility": f.visibility, "role": f.role}
    if f.expected_verdict:
        entry["expected_verdict"] = f.expected_verdict
    if f.note:
        entry["note"] = f.note
    return entry


def _criterion_entry(c: Criterion) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": c.key, "title": c.title}
    if c.description:
        entry["description"] = c.description
    entry["points"] = c.points
    entry["kind"] = c.kind
    if c.rule:
        entry["rule"] = c.rule
    if c.levels:
        entry["levels"] = c.levels
    return entry


def task_draft_hash(task: Task) -> str:
    files = {f.path: f.content.encode() for f in task.files.all()}
    return content_hash(draft_manifest(task), files)


@transaction.atomic
def version_freeze(
    *, task: Task, user: AbstractBaseUser | None, manifest_text: str = ""
) -> tuple[TaskVersion, bool]:
    """Freeze the draft into a TaskVersion; the same content gives the same version.

    Returns ``(version, created)``.
    """
    task = Task.objects.select_for_update().get(pk=task.pk)
    digest = task_draft_hash(task)
    existing = task.versions.filter(content_hash=digest).first()
    if existing is not None:
        return existing, False
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
        frozen = Rubric.objects.create(version=version)
        Criterion.objects.bulk_create(
            Criterion(
                rubric=frozen,
                key=c.key,
                title=c.title,
                description=c.description,
                points=c.points,
                kind=c.kind,
                rule=c.rule,
                levels=c.levels,
                position=c.position,
            )
            for c in draft_rubric.criteria.all()
        )
    return version, True


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PermissionDenied(message)


def task_submit_for_review(*, task: Task, user: AbstractBaseUser) -> None:
    _require(
        task.owner_id == user.pk or roles.is_admin(user),
        "only the task's author can send it to review",
    )
    transition(Task.objects, task.pk, to=TaskStatus.IN_REVIEW, allowed=TASK_TRANSITIONS)


def task_request_changes(*, task: Task, reviewer: AbstractBaseUser) -> None:
    _require(roles.has_role(reviewer, roles.REVIEWER), "only reviewers can request changes")
    transition(Task.objects, task.pk, to=TaskStatus.DRAFT, allowed=TASK_TRANSITIONS)


@transaction.atomic
def task_publish(*, task: Task, reviewer: AbstractBaseUser) -> TaskVersion:
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


def task_revise(*, task: Task, user: AbstractBaseUser) -> None:
    """Reopen a published or retired task as a draft; its versions stay frozen."""
    _require(task.owner_id == user.pk or roles.is_admin(user), "only the author can revise")
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.DRAFT,
        allowed=TASK_TRANSITIONS,
        from_={TaskStatus.PUBLISHED, TaskStatus.RETIRED},
    )


def task_retire(*, task: Task, user: AbstractBaseUser) -> None:
    _require(task.owner_id == user.pk or roles.is_admin(user), "only the author can retire")
    transition(Task.objects, task.pk, to=TaskStatus.RETIRED, allowed=TASK_TRANSITIONS)
