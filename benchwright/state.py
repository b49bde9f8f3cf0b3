"""Status changes as conditional updates.

Every status field has one ``ALLOWED_TRANSITIONS`` map beside its TextChoices.
``transition()`` moves a row only if its current status may go to the new one,
with a single ``UPDATE … WHERE status IN (allowed sources)``, and reports whether
the row moved, so two workers racing for the same row cannot both win.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models
from django.utils import timezone


class ImmutableVersionError(Exception):
    """A frozen task version (or its files, rubric or criteria) was about to change."""


class InvalidTransition(Exception):
    """The row is not in a status from which the requested change is allowed."""


def sources_for(target: str, allowed: Mapping[str, frozenset[str]]) -> set[str]:
    return {source for source, targets in allowed.items() if target in targets}


def transition(
    queryset: models.QuerySet[Any] | models.Manager[Any],
    pk: Any,
    *,
    to: str,
    allowed: Mapping[str, frozenset[str]],
    field: str = "status",
    from_: str | set[str] | None = None,
    **extra: Any,
) -> None:
    """Move row ``pk`` to status ``to`` or raise InvalidTransition.

    ``from_`` narrows the accepted current statuses further (e.g. a claim that
    must start from ``queued``). ``extra`` fields are written in the same UPDATE.
    """
    sources = sources_for(to, allowed)
    if from_ is not None:
        sources &= {from_} if isinstance(from_, str) else set(from_)
    if not sources:
        raise InvalidTransition(f"nothing may move to {str(to)!r}")
    values = {field: to, **extra}
    if any(f.name == "updated_at" for f in queryset.model._meta.get_fields()):
        values.setdefault("updated_at", timezone.now())
    changed = queryset.filter(pk=pk, **{f"{field}__in": sources}).update(**values)
    if changed != 1:
        current = queryset.filter(pk=pk).values_list(field, flat=True).first()
        raise InvalidTransition(
            f"{queryset.model.__name__} {pk}: cannot move from {current!r} to {str(to)!r}"
        )


class TimeStamped(models.Model):
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
