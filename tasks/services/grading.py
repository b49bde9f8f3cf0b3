"""Authoring in the browser: a draft's grading settings, checked by its kind."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User

from graders import registry
from graders.contract import GradingTableError

from ..models import (
    Task,
)
from .drafts import _require_editor
from .lifecycle import _require


def grading_check(task: Task, grading: dict[str, Any]) -> None:
    """Raise ``GradingTableError`` (its ``field`` a dotted path such as
    ``grading.tolerances.float16.atol``) if ``grading`` is not a valid [grading] table
    for this draft, as the task's kind checks it. Problems with the draft's files are
    left to the bundle check."""
    files = list(task.files.all())
    manifest = {
        "slug": task.slug,
        "kind": task.kind,
        "hardware": task.hardware,
        "grading": grading,
        "files": [{"path": f.path, "role": f.role, "visibility": f.visibility} for f in files],
    }
    registry.get(task.kind).check_draft_grading(manifest, {f.path: f.content for f in files})


def task_grading_update(*, task: Task, user: User, grading: dict[str, Any]) -> Task:
    """Replace the draft's [grading] table after its kind has checked it."""
    _require_editor(user, task)
    _require(registry.is_kind(task.kind), f"no grader is registered for {task.kind} tasks")
    try:
        json.dumps(grading, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise GradingTableError("grading", f"cannot be stored: {exc}") from None
    grading_check(task, grading)
    task.grading = grading
    task.save(update_fields=["grading", "updated_at"])
    return task
