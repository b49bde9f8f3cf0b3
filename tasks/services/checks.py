"""Checking a draft with the bundle rules and starting its validation."""

from __future__ import annotations

from django.contrib.auth.models import User

from ..bundle import (
    BundleError,
    BundleInvalid,
    parse_bundle,
)
from ..models import (
    Task,
    ValidationRun,
    ValidationStatus,
)
from .bundles import ExportError, bundle_render
from .drafts import _require_editor
from .manifests import task_draft_hash


def draft_problems(task: Task) -> list[BundleError]:
    """Every problem the bundle checker finds in the draft (empty: it would import)."""
    try:
        rendered = bundle_render(task=task)
    except ExportError as exc:
        return [BundleError(task.slug, "files", str(exc))]
    try:
        parse_bundle(rendered, name=task.slug)
    except BundleInvalid as exc:
        return exc.errors
    return []


class DraftInvalid(Exception):
    """The draft does not pass the bundle check; ``errors`` says where."""

    def __init__(self, errors: list[BundleError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


def task_validate(*, task: Task, user: User) -> ValidationRun:
    """Validate the draft as it is: the run already going for this content, or a new one.

    The draft must pass the bundle check first: grading a draft whose settings cannot
    be read would only report internal errors.
    """
    from ..validation import validation_start

    _require_editor(user, task)
    problems = draft_problems(task)
    if problems:
        raise DraftInvalid(problems)
    running = task.validation_runs.filter(
        content_hash=task_draft_hash(task), status=ValidationStatus.RUNNING
    ).first()
    return running or validation_start(task=task, user=user)
