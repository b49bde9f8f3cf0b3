"""Authoring in the browser: creating a draft and editing its metadata and statement."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import tomli_w
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from benchwright import roles
from graders import registry
from rubrics.models import Rubric

from ..bundle import (
    MANIFEST,
    MAX_FILE_BYTES,
    BundleError,
    BundleInvalid,
    parse_bundle,
)
from ..models import (
    DEFAULT_KIND,
    FileRole,
    Task,
    TaskFile,
    Visibility,
)
from ..selectors import can_edit_task
from .lifecycle import _require

#
# Every authoring write checks ``can_edit_task`` (authors edit their own drafts, admins any
# draft) and validates its input with the bundle format's own checks (tasks/bundle.py), so a
# draft edited in the browser always exports as a bundle that imports again. Input errors
# raise Django's ValidationError keyed by the field at fault.

STATEMENT_PATH = "statement.md"
METADATA_FIELDS = ("slug", "title", "kind", "difficulty", "hardware", "tags")
# The bundle name in probe errors; stripped again before errors reach a form.
_PROBE = "draft"


def _default_grading(kind: str) -> dict[str, Any]:
    """The grading table a new draft of ``kind`` starts with (none for a kind without a
    grader)."""
    return registry.get(kind).default_grading() if registry.is_kind(kind) else {}


def _require_editor(user: User, task: Task) -> None:
    _require(
        can_edit_task(user, task), f"{user} cannot edit {task.slug} (only its author, as a draft)"
    )


def _touch(task: Task) -> None:
    """The task's ``updated_at`` follows edits of its files and rubric too."""
    Task.objects.filter(pk=task.pk).update(updated_at=timezone.now())


def _field_head(field: str) -> str:
    return re.split(r"[.\[]", field, maxsplit=1)[0]


def _probe_bundle(manifest: dict[str, Any], files: dict[str, bytes]) -> list[BundleError]:
    """Every problem the bundle checker finds in a bundle made of ``manifest`` and ``files``."""
    data = {MANIFEST: tomli_w.dumps(manifest).encode(), **files}
    try:
        parse_bundle(data, name=_PROBE, grading=False)
    except BundleInvalid as exc:
        return exc.errors
    return []


def _probe_manifest(**fields: Any) -> dict[str, Any]:
    """A minimal valid manifest (one statement file), with ``fields`` replacing its keys."""
    manifest: dict[str, Any] = {
        "slug": "probe",
        "title": "Probe",
        "kind": DEFAULT_KIND,  # its [grading] table is not checked (grading=False)
        "difficulty": "easy",
        "tags": [],
        "hardware": "cpu",
        "statement": STATEMENT_PATH,
        "files": [{"path": STATEMENT_PATH, "visibility": "prompt", "role": "statement"}],
    }
    manifest.update(fields)
    return manifest


def _raise_field_errors(errors: Iterable[tuple[str | None, str]]) -> None:
    """Raise one ValidationError with every (field, message); None is a form-wide error."""
    collected: dict[str, list[str]] = {}
    for field, message in errors:
        collected.setdefault(field or "__all__", []).append(message)
    if collected:
        raise ValidationError(collected)


def _check_metadata(values: dict[str, Any]) -> None:
    problems = _probe_bundle(_probe_manifest(**values), {STATEMENT_PATH: b""})
    _raise_field_errors(
        (_field_head(e.field), e.message)
        for e in problems
        if _field_head(e.field) in values and _field_head(e.field) in METADATA_FIELDS
    )


def _clean_tags(tags: Iterable[str]) -> list[str]:
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if tag and tag not in cleaned:
            cleaned.append(tag)
    return cleaned


@transaction.atomic
def task_create(
    *,
    user: User,
    slug: str,
    title: str,
    kind: str,
    difficulty: str,
    hardware: str,
    tags: Iterable[str] = (),
) -> Task:
    """A new draft owned by ``user``: a statement file, an empty rubric and, for a
    kernel task, default grading settings."""
    _require(roles.has_role(user, roles.AUTHOR), "only authors create tasks")
    values = {
        "slug": slug,
        "title": title,
        "kind": kind,
        "difficulty": difficulty,
        "hardware": hardware,
        "tags": _clean_tags(tags),
    }
    _check_metadata(values)
    if Task.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": [f"{slug!r} is taken by another task"]})
    statement = f"# {title}\n"
    grading = _default_grading(kind)
    try:
        with transaction.atomic():
            task = Task.objects.create(owner=user, statement=statement, grading=grading, **values)
    except IntegrityError:  # created by someone else in the meantime
        raise ValidationError({"slug": [f"{slug!r} is taken by another task"]}) from None
    TaskFile.objects.create(
        task=task,
        path=STATEMENT_PATH,
        content=statement,
        visibility=Visibility.PROMPT,
        role=FileRole.STATEMENT,
    )
    Rubric.objects.create(task=task)
    return task


def task_update_metadata(
    *,
    task: Task,
    user: User,
    title: str,
    kind: str,
    difficulty: str,
    hardware: str,
    tags: Iterable[str] = (),
) -> Task:
    """Change a draft's title, kind, difficulty, target hardware and tags (not its slug)."""
    _require_editor(user, task)
    values: dict[str, Any] = {
        "title": title,
        "kind": kind,
        "difficulty": difficulty,
        "hardware": hardware,
        "tags": _clean_tags(tags),
    }
    _check_metadata(values)
    if kind != task.kind or not task.grading:
        # A grading table is its kind's: another kind starts from its own default.
        values["grading"] = _default_grading(kind)
    for name, value in values.items():
        setattr(task, name, value)
    task.save(update_fields=[*values, "updated_at"])
    return task


def task_statement_update(*, task: Task, user: User, text: str) -> Task:
    """Write the statement (Markdown): the statement file and its mirror on the task."""
    _require_editor(user, task)
    statement = task.files.filter(role=FileRole.STATEMENT).first()
    if statement is None:
        statement = TaskFile(
            task=task, path=STATEMENT_PATH, visibility=Visibility.PROMPT, role=FileRole.STATEMENT
        )
    if len(text.encode()) > MAX_FILE_BYTES:
        raise ValidationError({"statement": [f"is larger than {MAX_FILE_BYTES} bytes"]})
    with transaction.atomic():
        statement.content = text
        statement.save()
        task.statement = text
        task.save(update_fields=["statement", "updated_at"])
    return task
