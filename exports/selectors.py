"""Who may do what with exports, and the reads views and API endpoints share.

Access, decided once here:

- Exporting is for admins and for members of the ``exporter`` group (created on
  migrate; add users to it in the admin). Nobody else sees any export page or
  endpoint (403), and anonymous users are sent to log in (401 on the API).
- A definition and its snapshots belong to its owner: another exporter does not
  see them (404, so their existence is not revealed). Admins see all.
- Submitter identities (username, run id, labels) are written into rows only when
  the definition asks for them *and* the user who starts the build may see them,
  which is admins only; a snapshot that holds them is downloadable by admins only.
- API tokens additionally need the ``export`` scope.
- Rows a build left out are listed on its snapshot page with the submission's
  id, linked only for users who may open that submission's page, and with where
  a quote of a hidden file is; the hidden file's name and lines are shown only to
  users who may see the task's hidden files, and its content to nobody.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db.models import QuerySet
from django.urls import reverse

from benchwright import roles
from submissions.selectors import visible_submissions
from tasks.selectors import can_see_hidden_files

from .models import (
    EXPORTER,
    DefinitionVersion,
    ExportDefinition,
    LeftOutReason,
    LeftOutRow,
    Snapshot,
    SnapshotStatus,
)

AnyUser = AbstractBaseUser | AnonymousUser


def ensure_exporter_group(**_: Any) -> None:
    Group.objects.get_or_create(name=EXPORTER)


def grant_exporter(user: Any) -> None:
    ensure_exporter_group()
    user.groups.add(Group.objects.get(name=EXPORTER))


def may_export(user: AnyUser) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if roles.is_admin(user):  # type: ignore[arg-type]
        return True
    return user.groups.filter(name=EXPORTER).exists()  # type: ignore[union-attr,attr-defined]


def may_see_submitters(user: AnyUser) -> bool:
    return roles.is_admin(user)  # type: ignore[arg-type]


def definitions_for_user(user: AnyUser) -> QuerySet[ExportDefinition]:
    definitions = ExportDefinition.objects.select_related("owner", "current_version")
    if not may_export(user):
        return definitions.none()
    if roles.is_admin(user):  # type: ignore[arg-type]
        return definitions
    return definitions.filter(owner_id=user.pk)


def can_edit_definition(user: AnyUser, definition: ExportDefinition) -> bool:
    """The owner (while still an exporter) and admins."""
    if not may_export(user):
        return False
    return definition.owner_id == user.pk or roles.is_admin(user)  # type: ignore[arg-type]


def snapshots_for_user(user: AnyUser) -> QuerySet[Snapshot]:
    snapshots = Snapshot.objects.select_related("version__definition", "created_by").filter(
        version__definition__in=definitions_for_user(user)
    )
    if not may_see_submitters(user):
        snapshots = snapshots.filter(includes_submitter=False)
    return snapshots


def versions_of(definition: ExportDefinition) -> QuerySet[DefinitionVersion]:
    return definition.versions.select_related("created_by").order_by("-number")


def snapshots_of(user: AnyUser, definition: ExportDefinition) -> QuerySet[Snapshot]:
    return snapshots_for_user(user).filter(version__definition=definition)


WHY_LEFT_OUT = {
    LeftOutReason.DUPLICATE: (
        "The same code as a row already written for the task: equal once comments and "
        "whitespace are removed, whatever the file names, their order or an explanation."
    ),
    LeftOutReason.HIDDEN_CONTENT: (
        "Quotes a hidden file of the task (reference, expert solution, negative example "
        "or hidden test): a run of lines only that file has, in its order. Where the quote "
        "is is shown, never what it says."
    ),
    LeftOutReason.SCORE_RANGE: "The score is outside the definition's score range.",
}


@dataclass(frozen=True)
class LeftOutExample:
    submission_id: int | None
    url: str  # the submission's page, or "" where the user may not open it
    task: str
    version: int
    why: str


@dataclass(frozen=True)
class LeftOutGroup:
    reason: str
    label: str
    explanation: str
    count: int
    examples: list[LeftOutExample]

    @property
    def more(self) -> bool:
        return self.count > len(self.examples)


def left_out_for_user(user: AnyUser, snapshot: Snapshot) -> list[LeftOutGroup]:
    """Why a built snapshot left rows out: per reason, the count and the examples
    the build kept, told as this user may see them."""
    if snapshot.status != SnapshotStatus.SUCCEEDED:
        return []
    counts: dict[str, int] = (snapshot.manifest or {}).get("skipped") or {}
    rows = list(LeftOutRow.objects.filter(snapshot=snapshot).select_related("task_version__task"))
    visible = _openable_submissions(user, [r.submission_id for r in rows if r.submission_id])
    hidden_ok: dict[int, bool] = {}
    groups = []
    for reason, count in counts.items():
        examples = []
        for row in (r for r in rows if r.reason == reason):
            task = row.task_version.task
            if task.pk not in hidden_ok:
                hidden_ok[task.pk] = can_see_hidden_files(user, task)  # type: ignore[arg-type]
            examples.append(
                LeftOutExample(
                    submission_id=row.submission_id,
                    url=reverse("submission-detail", args=[row.submission_id])
                    if row.submission_id in visible
                    else "",
                    task=task.slug,
                    version=row.task_version.number,
                    why=_why(row, show_hidden_path=hidden_ok[task.pk]),
                )
            )
        known = reason in LeftOutReason.values
        groups.append(
            LeftOutGroup(
                reason=reason,
                label=LeftOutReason(reason).label if known else reason.replace("_", " "),
                explanation=WHY_LEFT_OUT[LeftOutReason(reason)] if known else "",
                count=int(count),
                examples=examples,
            )
        )
    return groups


def _openable_submissions(user: AnyUser, ids: list[int]) -> set[int]:
    """Those of ``ids`` whose page the user may open (the submission page's own check)."""
    if not ids:
        return set()
    return set(
        visible_submissions(user).filter(pk__in=ids).values_list("pk", flat=True)  # type: ignore[arg-type]
    )


def _why(row: LeftOutRow, *, show_hidden_path: bool) -> str:
    detail = row.detail or {}
    if row.reason == LeftOutReason.DUPLICATE:
        return f"Same code as submission #{detail.get('same_as')}, which was kept."
    if row.reason == LeftOutReason.SCORE_RANGE:
        bounds = f"{_number(detail.get('min'), '-inf')} to {_number(detail.get('max'), '+inf')}"
        return f"Score {_number(detail.get('score'), '?')}, outside {bounds}."
    first, last = detail.get("lines") or [0, 0]
    text = (
        f"Lines {first}-{last} of {detail.get('part')} quote {detail.get('matched')} lines "
        "of a hidden file"
    )
    if show_hidden_path:
        start, end = detail.get("hidden_lines") or [0, 0]
        text += f" ({detail.get('hidden_path')}, lines {start}-{end})"
    return text + "."


def _number(value: Any, missing: str) -> str:
    return missing if value is None else f"{float(value):.3g}"
