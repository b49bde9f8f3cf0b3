"""Reads of tasks, and the access checks every view and API endpoint goes through."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as UserModel
from django.db.models import Q, QuerySet

from benchwright import roles

from .models import Task, TaskFile, TaskStatus, TaskVersion, Visibility

User = UserModel | AnonymousUser


def tasks_for_user(user: User) -> QuerySet[Task]:
    """Tasks the user may see: reviewers and admins see all; authors see their own
    and published ones; everyone else sees published ones."""
    tasks = Task.objects.select_related("owner", "current_version")
    if roles.has_role(user, roles.REVIEWER):
        return tasks
    published = Q(status=TaskStatus.PUBLISHED, current_version__isnull=False)
    if user.is_authenticated:
        return tasks.filter(published | Q(owner_id=user.pk))
    return tasks.filter(published)


def can_edit_task(user: User, task: Task) -> bool:
    """Authors edit only their own drafts; admins edit any draft."""
    if task.status != TaskStatus.DRAFT:
        return False
    if roles.is_admin(user):
        return True
    return task.owner_id == user.pk and roles.has_role(user, roles.AUTHOR)


def can_see_hidden_files(user: User, task: Task) -> bool:
    """Hidden files: the task's authors, reviewers and admins only."""
    if not user.is_authenticated:
        return False
    return task.owner_id == user.pk or roles.has_role(user, roles.REVIEWER)


def files_for_user(
    user: User, task: Task, version: TaskVersion | None = None
) -> QuerySet[TaskFile]:
    """The draft's files (or a version's), without hidden ones unless the user may see them."""
    files = version.files.all() if version is not None else task.files.all()
    if not can_see_hidden_files(user, task):
        files = files.filter(visibility=Visibility.PROMPT)
    return files


def grading_payload(
    *, slug: str, kind: str, hardware: str, grading: dict[str, Any], files: Iterable[TaskFile]
) -> dict[str, Any]:
    """The task half of a grading message: what a sandbox host needs, and nothing else."""
    files = list(files)
    return {
        "manifest": {
            "slug": slug,
            "kind": kind,
            "hardware": hardware,
            "grading": grading,
            "files": [{"path": f.path, "role": f.role, "visibility": f.visibility} for f in files],
        },
        "task_files": {f.path: f.content for f in files},
    }
