"""Exports in the admin: definitions are edited through the app (so that an edit
freezes a new version); versions and snapshots are read-only here."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from . import services
from .models import DefinitionVersion, ExportDefinition, LeftOutRow, Snapshot, SnapshotStatus


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class VersionInline(admin.TabularInline):  # type: ignore[type-arg]
    model = DefinitionVersion
    fields = ["number", "title", "format", "content_hash", "created_at"]
    readonly_fields = ["number", "title", "format", "content_hash", "created_at"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ExportDefinition)
class ExportDefinitionAdmin(ReadOnlyAdmin):
    list_display = ["slug", "owner", "current_version", "updated_at"]
    search_fields = ["slug"]
    inlines = [VersionInline]


@admin.register(DefinitionVersion)
class DefinitionVersionAdmin(ReadOnlyAdmin):
    list_display = ["definition", "number", "format", "content_hash", "created_at"]
    list_filter = ["format"]
    search_fields = ["definition__slug"]


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    """Deleting a snapshot here deletes its files too (``snapshot_delete``); a queued
    or running one cannot be deleted."""

    list_display = ["pk", "version", "status", "rows_written", "created_by", "created_at"]
    list_filter = ["status"]
    search_fields = ["version__definition__slug"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        finished = obj is None or obj.status in (SnapshotStatus.SUCCEEDED, SnapshotStatus.FAILED)
        return finished and super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Snapshot) -> None:
        services.snapshot_delete(snapshot_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Snapshot]) -> None:
        busy = []
        for pk in queryset.values_list("pk", flat=True):
            try:
                services.snapshot_delete(snapshot_id=pk)
            except services.SnapshotBusy:
                busy.append(pk)
        if busy:
            self.message_user(
                request,
                f"Not deleted, still queued or running: snapshots {', '.join(map(str, busy))}.",
                level=messages.WARNING,
            )


@admin.register(LeftOutRow)
class LeftOutRowAdmin(ReadOnlyAdmin):
    """Examples of rows a build left out; deleting their snapshot deletes them."""

    list_display = ["pk", "snapshot", "reason", "task_version", "submission", "created_at"]
    list_filter = ["reason"]
    raw_id_fields = ["snapshot", "task_version", "submission"]
