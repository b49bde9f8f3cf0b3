"""Exports in the admin: definitions are edited through the app (so that an edit
freezes a new version); versions and snapshots are read-only here."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import DefinitionVersion, ExportDefinition, Snapshot


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
    list_display = ["pk", "version", "status", "rows_written", "created_by", "created_at"]
    list_filter = ["status"]
    search_fields = ["version__definition__slug"]
