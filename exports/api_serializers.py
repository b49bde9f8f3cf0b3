"""Serializers of the export endpoints. Input serializers state the shape for the
schema and do the type checks; ``exports.spec.Spec`` has the last word."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.fields import StrictCharField, StrictSlugField
from tasks.api_serializers import KindField
from tasks.models import Difficulty, Hardware

from .models import DefinitionVersion, ExportDefinition, ExportFormat, Snapshot, SnapshotStatus
from .spec import MAX_LIST, MAX_SEED, REVIEW_DECISIONS, VERDICTS


def _choices(values: Any) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.ChoiceField(choices=values), required=False, max_length=MAX_LIST
    )


def _strings() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=200), required=False, max_length=MAX_LIST
    )


def _ratio(**kwargs: Any) -> serializers.FloatField:
    return serializers.FloatField(min_value=0.0, max_value=1.0, **kwargs)


class FiltersSerializer(serializers.Serializer[Any]):
    kinds = serializers.ListField(child=KindField(), required=False, max_length=MAX_LIST)
    tags = _strings()
    difficulties = _choices(Difficulty.choices)
    hardware = _choices(Hardware.choices)
    tasks = _strings()
    task_versions = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=10**18),
        required=False,
        max_length=MAX_LIST,
    )
    verdicts = _choices(VERDICTS)
    review_decisions = _choices(REVIEW_DECISIONS)
    models = _strings()
    score_min = _ratio(required=False, allow_null=True)
    score_max = _ratio(required=False, allow_null=True)
    created_after = serializers.DateTimeField(required=False, allow_null=True)
    created_before = serializers.DateTimeField(required=False, allow_null=True)


class SplitSerializer(serializers.Serializer[Any]):
    train = _ratio()
    validation = _ratio()
    test = _ratio()


class OptionsSerializer(serializers.Serializer[Any]):
    margin = _ratio(required=False, help_text="preference: least score difference of a pair")
    pairs_per_submission = serializers.IntegerField(min_value=0, max_value=20, required=False)
    include_explanations = serializers.BooleanField(required=False)


class DefinitionContentSerializer(serializers.Serializer[Any]):
    title = StrictCharField(max_length=200)
    description = StrictCharField(max_length=5000, required=False, allow_blank=True)
    format = serializers.ChoiceField(choices=ExportFormat.choices)
    filters = FiltersSerializer(required=False)
    split = SplitSerializer(required=False)
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, required=False)
    include_submitter = serializers.BooleanField(required=False)
    options = OptionsSerializer(required=False)


class DefinitionCreateSerializer(DefinitionContentSerializer):
    slug = StrictSlugField(max_length=80)


def spec_data(validated: dict[str, Any]) -> dict[str, Any]:
    """Validated serializer data as plain JSON data for ``Spec.parse``."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items()}
        if isinstance(value, list):
            return [plain(item) for item in value]
        if isinstance(value, datetime):
            return value.isoformat()
        return value

    return {key: plain(value) for key, value in validated.items() if key != "slug"}


class VersionSerializer(serializers.ModelSerializer[DefinitionVersion]):
    filters = serializers.JSONField()
    split = serializers.JSONField()
    options = serializers.JSONField()

    class Meta:
        model = DefinitionVersion
        fields = [
            "number",
            "content_hash",
            "title",
            "description",
            "format",
            "filters",
            "split",
            "seed",
            "include_submitter",
            "options",
            "created_at",
        ]
        read_only_fields = fields


class VersionSummarySerializer(serializers.ModelSerializer[DefinitionVersion]):
    class Meta:
        model = DefinitionVersion
        fields = ["number", "content_hash", "format", "created_at"]
        read_only_fields = fields


class DefinitionSerializer(serializers.ModelSerializer[ExportDefinition]):
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    current_version = VersionSerializer(read_only=True)
    versions = VersionSummarySerializer(many=True, read_only=True)

    class Meta:
        model = ExportDefinition
        fields = ["slug", "owner", "current_version", "versions", "created_at", "updated_at"]
        read_only_fields = fields


class SnapshotSerializer(serializers.ModelSerializer[Snapshot]):
    definition = serializers.CharField(source="version.definition.slug", read_only=True)
    version = serializers.IntegerField(source="version.number", read_only=True)
    progress = serializers.IntegerField(source="progress_percent", read_only=True)
    rows = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Snapshot
        fields = [
            "id",
            "definition",
            "version",
            "status",
            "includes_submitter",
            "items_total",
            "items_done",
            "rows_written",
            "progress",
            "rows",
            "archive_bytes",
            "archive_sha256",
            "download_url",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.IntegerField(), allow_null=True))
    def get_rows(self, obj: Snapshot) -> dict[str, int] | None:
        """Rows per split, once built."""
        if not (obj.manifest or {}).get("rows"):
            return None
        return {split["name"]: split["rows"] for split in obj.splits}

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_download_url(self, obj: Snapshot) -> str | None:
        """The tar.gz, once built."""
        if obj.status != SnapshotStatus.SUCCEEDED:
            return None
        return reverse("api-export-snapshot-download", args=[obj.pk])
