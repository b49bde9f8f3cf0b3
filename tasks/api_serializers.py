"""What a solver may see of a published task: nothing hidden, nothing from the reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

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


class TaskShapeSetSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    hosts = serializers.ListField(child=serializers.CharField(), required=False)


class TaskGradingSerializer(serializers.Serializer[Any]):
    format = serializers.CharField(required=False)
    language = serializers.CharField(required=False)
    trials = serializers.IntegerField(required=False)
    shapes = TaskShapeSetSerializer(many=True, required=False)
    tolerances = serializers.DictField(child=serializers.DictField(), required=False)
    timing = serializers.DictField(required=False)
    limits = serializers.DictField(required=False)


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
            "files": [{"path": f.path, "role": f.role, "content": f.content} for f in files],
            "grading": public_grading(version),
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


SCALAR = (str, int, float, bool)


def _scalars(table: Any) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        return {}
    return {str(k): v for k, v in table.items() if isinstance(v, SCALAR)}


def public_grading(version: TaskVersion) -> dict[str, Any]:
    """The [grading] settings a solver may see, by allow-list.

    Shape sets give their names (and the hosts they run on) but not their sizes
    or value ranges: those are the test, and an author who wants solvers to know
    them says so in the statement. Unknown keys are never passed through.
    """
    grading = version.grading if isinstance(version.grading, Mapping) else {}
    public: dict[str, Any] = {
        key: grading[key] for key in ("format", "language") if isinstance(grading.get(key), str)
    }
    if isinstance(grading.get("trials"), int):
        public["trials"] = grading["trials"]
    shapes = grading.get("shapes")
    if isinstance(shapes, list):
        public["shapes"] = [
            {"name": str(s.get("name", f"set-{i + 1}"))}
            | ({"hosts": [str(h) for h in s["hosts"]]} if isinstance(s.get("hosts"), list) else {})
            for i, s in enumerate(shapes)
            if isinstance(s, Mapping)
        ]
    tolerances = grading.get("tolerances")
    if isinstance(tolerances, Mapping):
        public["tolerances"] = {str(k): _scalars(v) for k, v in tolerances.items()}
    for key in ("timing", "limits"):
        if isinstance(grading.get(key), Mapping):
            public[key] = _scalars(grading[key])
    return public


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
