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
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db.models import QuerySet

from benchwright import roles

from .models import EXPORTER, DefinitionVersion, ExportDefinition, Snapshot

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
