"""Authoring in the browser: a draft's rubric."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from rubrics.models import Criterion, Rubric

from ..models import (
    DEFAULT_KIND,
    Task,
)
from .drafts import (
    STATEMENT_PATH,
    _field_head,
    _probe_bundle,
    _probe_manifest,
    _raise_field_errors,
    _require_editor,
    _touch,
)
from .lifecycle import _require


def _criterion_check(rubric: Rubric, entry: dict[str, Any], *, exclude: int | None = None) -> None:
    """Check one criterion with the bundle format's rules, and its id against the others."""
    errors: list[tuple[str | None, str]] = []
    owner = rubric.task or rubric.version
    kind = owner.kind if owner is not None else DEFAULT_KIND  # whose rule types apply
    for error in _probe_bundle(
        _probe_manifest(kind=kind, rubric={"criteria": [entry]}), {STATEMENT_PATH: b""}
    ):
        prefix = "rubric.criteria[0]."
        field = error.field.removeprefix(prefix) if error.field.startswith(prefix) else ""
        errors.append((_field_head(field) or None, error.message))
    criteria = rubric.criteria.all() if exclude is None else rubric.criteria.exclude(pk=exclude)
    if criteria.filter(key=entry.get("id")).exists():
        errors.append(("key", f"{entry.get('id')!r} is used by another criterion"))
    _raise_field_errors([("key" if f == "id" else f, m) for f, m in errors])


def _criterion_fields(
    *,
    key: str,
    title: str,
    description: str,
    points: int,
    kind: str,
    rule: dict[str, Any] | None,
    levels: list[dict[str, Any]] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the criterion as a manifest entry, its model fields)."""
    fields = {
        "key": key,
        "title": title,
        "description": description,
        "points": points,
        "kind": kind,
        "rule": dict(rule or {}) if kind == "automatic" else {},
        "levels": list(levels or []) if kind == "human" else [],
    }
    entry: dict[str, Any] = {"id": key, "title": title, "points": points, "kind": kind}
    if description:
        entry["description"] = description
    if kind == "automatic":
        entry["rule"] = fields["rule"]
    elif kind == "human":
        entry["levels"] = fields["levels"]
    return entry, fields


def _draft_rubric(task: Task) -> Rubric:
    rubric, _ = Rubric.objects.get_or_create(task=task)
    return rubric


@transaction.atomic
def rubric_criterion_add(
    *,
    task: Task,
    user: User,
    key: str,
    title: str,
    points: int,
    kind: str,
    description: str = "",
    rule: dict[str, Any] | None = None,
    levels: list[dict[str, Any]] | None = None,
) -> Criterion:
    """Append a criterion to the draft's rubric (created if the draft has none)."""
    _require_editor(user, task)
    rubric = _draft_rubric(task)
    entry, fields = _criterion_fields(
        key=key, title=title, description=description, points=points, kind=kind, rule=rule,
        levels=levels,
    )  # fmt: skip
    _criterion_check(rubric, entry)
    last = rubric.criteria.aggregate(last=Max("position"))["last"]
    criterion = Criterion.objects.create(
        rubric=rubric, position=0 if last is None else last + 1, **fields
    )
    _touch(task)
    return criterion


def _criterion_task(criterion: Criterion) -> Task:
    task = criterion.rubric.task
    _require(task is not None, "criteria of a frozen version cannot change")
    assert task is not None
    return task


@transaction.atomic
def rubric_criterion_update(
    *,
    criterion: Criterion,
    user: User,
    key: str,
    title: str,
    points: int,
    kind: str,
    description: str = "",
    rule: dict[str, Any] | None = None,
    levels: list[dict[str, Any]] | None = None,
) -> Criterion:
    task = _criterion_task(criterion)
    _require_editor(user, task)
    entry, fields = _criterion_fields(
        key=key, title=title, description=description, points=points, kind=kind, rule=rule,
        levels=levels,
    )  # fmt: skip
    _criterion_check(criterion.rubric, entry, exclude=criterion.pk)
    for name, value in fields.items():
        setattr(criterion, name, value)
    criterion.save(update_fields=[*fields, "updated_at"])
    _touch(task)
    return criterion


def _renumber(ordered: list[Criterion]) -> None:
    for position, criterion in enumerate(ordered):
        criterion.position = position
    Criterion.objects.bulk_update(ordered, ["position"])


@transaction.atomic
def rubric_criterion_delete(*, criterion: Criterion, user: User) -> None:
    task = _criterion_task(criterion)
    _require_editor(user, task)
    rubric = criterion.rubric
    criterion.delete()
    _renumber(list(rubric.criteria.order_by("position", "pk")))
    _touch(task)


@transaction.atomic
def rubric_criterion_move(*, criterion: Criterion, user: User, offset: int) -> None:
    """Move a criterion ``offset`` places (negative: up); clamped at either end."""
    task = _criterion_task(criterion)
    _require_editor(user, task)
    ordered = list(criterion.rubric.criteria.select_for_update().order_by("position", "pk"))
    index = next(i for i, c in enumerate(ordered) if c.pk == criterion.pk)
    target = max(0, min(len(ordered) - 1, index + offset))
    ordered.insert(target, ordered.pop(index))
    _renumber(ordered)
    _touch(task)
