"""What a solver may see of a published task: nothing hidden, nothing from the reference."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from rest_framework import serializers

from graders import registry
from graders.filetext import is_binary

from .models import Difficulty, Hardware, Task, TaskFile, TaskVersion, kind_choices


class KindField(serializers.ChoiceField):
    """A task kind: one of the registered kinds, read when the serializer is built (DRF
    builds a serializer's fields anew for each instance)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=kind_choices(), **kwargs)


class TaskSummarySerializer(serializers.Serializer[Task]):
    slug = serializers.SlugField()
    title = serializers.CharField()
    kind = KindField()
    difficulty = serializers.ChoiceField(choices=Difficulty.choices)
    tags = serializers.ListField(child=serializers.CharField())
    hardware = serializers.ChoiceField(choices=Hardware.choices)
    version = serializers.IntegerField(help_text="The published version submissions pin.")
    published_at = serializers.DateTimeField()

    def to_representation(self, instance: Task) -> dict[str, Any]:
        version = instance.current_version
        assert version is not None
        return {
            "slug": instance.slug,
            "title": version.title,
            "kind": version.kind,
            "difficulty": version.difficulty,
            "tags": list(version.tags),
            "hardware": version.hardware,
            "version": version.number,
            "published_at": serializers.DateTimeField().to_representation(version.created_at),
        }


class TaskPromptFileSerializer(serializers.Serializer[TaskFile]):
    path = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()
    encoding = serializers.ChoiceField(
        choices=["utf-8", "base64"],
        help_text="base64 for gzip files (a path ending in .gz): decode it for the file's bytes",
    )


def file_payload(f: TaskFile) -> dict[str, str]:
    """A task file as the API gives it: its text, or the base64 of a gzip file's bytes."""
    return {
        "path": f.path,
        "role": f.role,
        "content": f.content,
        "encoding": "base64" if is_binary(f.path) else "utf-8",
    }


class TaskShapeSetSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    hosts = serializers.ListField(child=serializers.CharField(), required=False)


class TaskTestGroupSerializer(serializers.Serializer[Any]):
    total = serializers.IntegerField()
    visible = serializers.ListField(
        child=serializers.CharField(), help_text="Ids of the tests in files solvers are shown."
    )


class TaskGradingSerializer(serializers.Serializer[Any]):
    """What a task's kind shows of its grading settings; kernel tasks have the first
    seven fields, debugging tasks the rest (with tolerances and limits)."""

    format = serializers.CharField(required=False)
    language = serializers.CharField(required=False)
    trials = serializers.IntegerField(required=False)
    shapes = TaskShapeSetSerializer(many=True, required=False)
    tolerances = serializers.DictField(child=serializers.DictField(), required=False)
    timing = serializers.DictField(required=False)
    limits = serializers.DictField(required=False)
    root = serializers.CharField(  # type: ignore[assignment]  # a field named root
        required=False, help_text="The codebase's folder."
    )
    fix_paths = serializers.ListField(child=serializers.CharField(), required=False)
    test_timeout_s = serializers.FloatField(required=False)
    network = serializers.ChoiceField(
        choices=["none", "loopback"],
        required=False,
        help_text="loopback: tests talk TCP to themselves on the sandbox's own loopback.",
    )
    fail_to_pass = TaskTestGroupSerializer(required=False)
    pass_to_pass = TaskTestGroupSerializer(required=False)
    peak_memory = serializers.DictField(required=False)


class TaskCriterionSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    points = serializers.IntegerField()
    kind = serializers.CharField()
    rule = serializers.DictField()
    levels = serializers.ListField(child=serializers.DictField())


class TaskDetailSerializer(TaskSummarySerializer):
    statement = serializers.CharField(help_text="Markdown.")
    files = TaskPromptFileSerializer(many=True, help_text="Files shown to solvers only.")
    grading = TaskGradingSerializer()
    rubric = TaskCriterionSerializer(many=True)

    def to_representation(self, instance: Task) -> dict[str, Any]:
        version = instance.current_version
        assert version is not None
        files = self.context["prompt_files"]
        criteria = self.context["criteria"]
        return super().to_representation(instance) | {
            "statement": version.statement,
            "files": [file_payload(f) for f in files],
            "grading": public_grading(version, {f.path for f in files}),
            "rubric": [
                {
                    "key": c.key,
                    "title": c.title,
                    "description": c.description,
                    "points": c.points,
                    "kind": c.kind,
                    "rule": dict(c.rule or {}),
                    "levels": list(c.levels or []),
                }
                for c in criteria
            ],
        }


def public_grading(version: TaskVersion, shown_paths: Collection[str]) -> dict[str, Any]:
    """The [grading] settings a solver may see: the task kind's allow-list."""
    grading = version.grading if isinstance(version.grading, Mapping) else {}
    return registry.get(version.kind).public_grading(grading, shown_paths)


class TaskFilterSerializer(serializers.Serializer[Any]):
    kind = KindField(required=False)
    difficulty = serializers.ChoiceField(choices=Difficulty.choices, required=False)
    hardware = serializers.ChoiceField(choices=Hardware.choices, required=False)
    tags = serializers.RegexField(
        r"^[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*$",
        max_length=400,
        required=False,
        help_text="Comma-separated; a task must carry every tag.",
    )
