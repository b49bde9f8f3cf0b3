"""Review API shapes. What a reviewer gets of a submission is blind: no id, model,
run, labels or submitter; an item is named by its review slot's id."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from submissions.api_serializers import path_problem
from tasks.api_serializers import file_payload

from .models import Decision, Preference, Review
from .services import MAX_LINE_COMMENTS, CommentInput, PairInput, ReviewInput, ScoreInput

MAX_TEXT = 20_000
MAX_COMMENT = 5_000
MAX_SCORES = 100


class TaskFileOutSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()


class FileOutSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    content = serializers.CharField()


class LevelSerializer(serializers.Serializer[Any]):
    score = serializers.FloatField()
    descriptor = serializers.CharField()


class CriterionOutSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    kind = serializers.ChoiceField(choices=["automatic", "human"])
    points = serializers.IntegerField()
    levels = LevelSerializer(many=True)
    awarded = serializers.FloatField(
        allow_null=True, help_text="Automatic criteria: the grader's points."
    )
    met = serializers.BooleanField(allow_null=True)
    detail = serializers.CharField()


class TaskOutSerializer(serializers.Serializer[Any]):
    slug = serializers.CharField()
    title = serializers.CharField()
    version = serializers.IntegerField()
    hardware = serializers.CharField()
    statement = serializers.CharField(help_text="Markdown.")


class ItemSerializer(serializers.Serializer[Any]):
    """A review item as its reviewer sees it."""

    id = serializers.IntegerField(help_text="The review slot; use it to submit the review.")
    status = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)
    task = TaskOutSerializer()
    prompt_files = TaskFileOutSerializer(many=True)
    starter_files = TaskFileOutSerializer(many=True)
    reference_files = TaskFileOutSerializer(many=True)
    files = FileOutSerializer(many=True)
    report = serializers.JSONField(allow_null=True, help_text="The grading report (reviewer view).")
    rubric = CriterionOutSerializer(many=True)


def rubric_data(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "key": row["key"],
            "title": row["criterion"].title,
            "description": row["criterion"].description,
            "kind": row["criterion"].kind,
            "points": row["criterion"].points,
            "levels": [
                {"score": float(level["score"]), "descriptor": level["descriptor"]}
                for level in row["levels"]
            ],
            "awarded": row["awarded"],
            "met": row["met"],
            "detail": row["detail"],
        }
        for row in rows
    ]


def item_data(assignment: Any, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": assignment.pk,
        "status": assignment.status,
        "expires_at": assignment.expires_at,
        "task": item["task"],
        "prompt_files": [file_payload(f) for f in item["task_files"]["prompt"]],
        "starter_files": [file_payload(f) for f in item["task_files"]["starter"]],
        "reference_files": [file_payload(f) for f in item["task_files"]["reference"]],
        "files": [{"path": p, "content": c} for p, c in sorted(item["files"].items())],
        "report": item["report"],
        "rubric": rubric_data(item["rubric"]),
    }


class ScoreInSerializer(serializers.Serializer[Any]):
    criterion = serializers.CharField(max_length=60)
    level = serializers.FloatField(
        required=False, allow_null=True, default=None, help_text="Human criteria: a level's score."
    )
    comment = serializers.CharField(
        max_length=MAX_COMMENT, required=False, allow_blank=True, default=""
    )
    overturned = serializers.BooleanField(
        required=False, default=False, help_text="Automatic criteria: the grader got it wrong."
    )
    reason = serializers.CharField(
        max_length=MAX_COMMENT, required=False, allow_blank=True, default=""
    )


class CommentInSerializer(serializers.Serializer[Any]):
    path = serializers.CharField(max_length=255)
    line = serializers.IntegerField(min_value=1, max_value=1_000_000)
    body = serializers.CharField(max_length=MAX_COMMENT)

    def validate_path(self, value: str) -> str:
        problem = path_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class DecisionField(serializers.ChoiceField):
    """A reviewer's decision: ``accept``, ``reject``, ``needs_fix``; the outcome's spelling
    (``accepted``, ``rejected``), which export filters use, means the same."""

    ALIASES = {"accepted": Decision.ACCEPT, "rejected": Decision.REJECT}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=Decision.choices, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and data in self.ALIASES:
            data = str(self.ALIASES[data])
        return super().to_internal_value(data)


class ReviewBodySerializer(serializers.Serializer[Any]):
    decision = DecisionField()
    feedback = serializers.CharField(max_length=MAX_TEXT)
    scores = ScoreInSerializer(many=True)
    comments = CommentInSerializer(many=True, required=False, default=list)

    def validate_scores(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keys = [s["criterion"] for s in value]
        if len(keys) != len(set(keys)):
            raise serializers.ValidationError("each criterion at most once")
        if len(keys) > MAX_SCORES:
            raise serializers.ValidationError(f"at most {MAX_SCORES} criteria")
        return value

    def validate_comments(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(value) > MAX_LINE_COMMENTS:
            raise serializers.ValidationError(f"at most {MAX_LINE_COMMENTS} line comments")
        return value

    def to_input(self) -> ReviewInput:
        data = self.validated_data
        return ReviewInput(
            decision=data["decision"],
            feedback=data["feedback"],
            scores={
                s["criterion"]: ScoreInput(
                    level=s["level"],
                    comment=s["comment"],
                    overturned=s["overturned"],
                    reason=s["reason"],
                )
                for s in data["scores"]
            },
            comments=[
                CommentInput(path=c["path"], line=c["line"], body=c["body"])
                for c in data["comments"]
            ],
        )


class ReviewInSerializer(ReviewBodySerializer):
    item = serializers.IntegerField(
        min_value=1, max_value=10**18 - 1, help_text="The claimed item's id."
    )


class ScoreOutSerializer(serializers.Serializer[Any]):
    criterion = serializers.CharField(source="criterion.key")
    points = serializers.FloatField()
    comment = serializers.CharField()
    automatic_points = serializers.FloatField(allow_null=True)
    overturned = serializers.BooleanField()
    reason = serializers.CharField(source="overturn_reason")


class CommentOutSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    line = serializers.IntegerField()
    line_text = serializers.CharField()
    body = serializers.CharField()


class ReviewSerializer(serializers.ModelSerializer[Review]):
    item = serializers.IntegerField(source="assignment_id")
    scores = ScoreOutSerializer(many=True)
    comments = CommentOutSerializer(many=True, source="line_comments")

    class Meta:
        model = Review
        fields = [
            "id",
            "item",
            "decision",
            "feedback",
            "score",
            "scores",
            "comments",
            "created_at",
            "updated_at",
        ]


class PairSideSerializer(serializers.Serializer[Any]):
    files = FileOutSerializer(many=True)
    report = serializers.JSONField(allow_null=True)


class PairSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField(help_text="The pair; use it to submit the judgement.")
    task = TaskOutSerializer()
    criteria = CriterionOutSerializer(many=True, help_text="Judge each human criterion.")
    a = PairSideSerializer()
    b = PairSideSerializer()


class JudgementInSerializer(serializers.Serializer[Any]):
    winner = serializers.ChoiceField(choices=Preference.choices)
    criteria = serializers.DictField(
        child=serializers.ChoiceField(choices=Preference.choices),
        help_text="Each human criterion's key -> a, b or tie.",
    )
    reason = serializers.CharField(max_length=MAX_TEXT)

    def to_input(self) -> PairInput:
        data = self.validated_data
        return PairInput(
            winner=data["winner"], criterion_winners=data["criteria"], reason=data["reason"]
        )


class JudgementSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    pair = serializers.UUIDField()
    winner = serializers.CharField()
    criteria = serializers.DictField(child=serializers.CharField(), source="criterion_winners")
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
