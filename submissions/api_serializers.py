"""Submission API shapes: what clients send (validated to the byte) and what they get back."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.fields import StrictCharField, StrictSlugField
from graders.verdicts import Verdict

from .models import Submission, SubmissionStatus
from .selectors import (
    public_report,
    rubric_scores,
    run_speedup_view,
    speedup_view,
    submission_review_outcome,
)

LABEL_KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
MAX_LABELS = 20


def path_problem(path: str) -> str | None:
    """Why a submitted file name is refused, or None. Names are relative POSIX
    paths of plain printable characters."""
    if not path:
        return "empty file name"
    if path.startswith("/"):
        return "absolute paths are not allowed"
    if "\\" in path:
        return "backslashes are not allowed"
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for ch in path):
        return "control or unassigned characters are not allowed"
    parts = path.split("/")
    if ".." in parts:
        return "'..' is not allowed"
    if any(part in ("", ".") for part in parts):
        return "empty or '.' path components are not allowed"
    if any(len(part.encode("utf-8")) > 255 for part in parts):
        return "a path component is longer than 255 bytes in UTF-8"
    return None


class SubmissionFileInSerializer(serializers.Serializer[Any]):
    path = StrictCharField(max_length=255, trim_whitespace=False, help_text="e.g. solution.py")
    content = StrictCharField(allow_blank=True, trim_whitespace=False, help_text="UTF-8 text.")

    def validate_path(self, value: str) -> str:
        problem = path_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class SubmissionInSerializer(serializers.Serializer[Any]):
    task = StrictSlugField(max_length=80, help_text="A published task's slug.")
    model = StrictCharField(max_length=200, help_text="The model that wrote the solution.")
    run_id = StrictCharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="Groups a run."
    )
    labels = serializers.DictField(
        child=StrictCharField(max_length=200, allow_blank=True),
        required=False,
        default=dict,
        help_text=f"Up to {MAX_LABELS} string labels; keys match {LABEL_KEY.pattern}.",
    )
    files = SubmissionFileInSerializer(many=True, allow_empty=False)

    def validate_labels(self, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_LABELS:
            raise serializers.ValidationError(f"at most {MAX_LABELS} labels")
        bad = [k for k in value if not LABEL_KEY.match(k)]
        if bad:
            raise serializers.ValidationError(f"label keys must match {LABEL_KEY.pattern}")
        return value

    def validate_files(self, value: list[dict[str, str]]) -> list[dict[str, str]]:
        if len(value) > settings.API_MAX_FILES:
            raise serializers.ValidationError(f"at most {settings.API_MAX_FILES} files")
        paths = [f["path"] for f in value]
        if len(set(paths)) != len(paths):
            raise serializers.ValidationError("file paths must be unique")
        folders = {
            "/".join(p.split("/")[:end]) for p in paths for end in range(1, p.count("/") + 1)
        }
        both = sorted(set(paths) & folders)
        if both:
            raise serializers.ValidationError(f"{both[0]} is both a file and a folder")
        total = 0
        limit = settings.API_MAX_FILE_BYTES
        for f in value:
            size = len(f["content"].encode("utf-8"))
            if size > limit:
                raise serializers.ValidationError(
                    f"{f['path']}: {size} bytes; the limit is {limit} per file"
                )
            total += size
        if total > settings.API_MAX_SUBMISSION_BYTES:
            raise serializers.ValidationError(
                f"{total} bytes in all; the limit is {settings.API_MAX_SUBMISSION_BYTES} "
                "per submission"
            )
        return value


class SubmissionBatchInSerializer(serializers.Serializer[Any]):
    submissions = SubmissionInSerializer(many=True, allow_empty=False)

    def validate_submissions(self, value: list[Any]) -> list[Any]:
        if len(value) > settings.API_MAX_BATCH:
            raise serializers.ValidationError(f"at most {settings.API_MAX_BATCH} per batch")
        return value


class SubmissionBatchItemSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    task = serializers.CharField()
    status = serializers.CharField()


class SubmissionBatchOutSerializer(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    submissions = SubmissionBatchItemSerializer(many=True)


def _csv(choices: list[str], help_text: str) -> serializers.RegexField:
    alternatives = "|".join(re.escape(c) for c in choices)
    return serializers.RegexField(
        rf"^({alternatives})(,({alternatives}))*$",
        required=False,
        max_length=500,
        help_text=help_text + " Comma-separated: any of " + ", ".join(choices) + ".",
    )


class SubmissionFilterSerializer(serializers.Serializer[Any]):
    task = serializers.SlugField(max_length=80, required=False)
    model = serializers.CharField(max_length=200, required=False)
    run_id = serializers.CharField(max_length=200, required=False)
    status = _csv(list(SubmissionStatus.values), "Statuses.")
    verdict = _csv(Verdict.values(), "Verdicts.")
    created_after = serializers.DateTimeField(required=False, help_text="Inclusive.")
    created_before = serializers.DateTimeField(required=False, help_text="Exclusive.")

    def filters(self) -> dict[str, Any]:
        data = dict(self.validated_data)
        for key, name in (("status", "statuses"), ("verdict", "verdicts")):
            value = data.pop(key, "")
            data[name] = value.split(",") if value else []
        return data


def _speedup_view(obj: Submission) -> dict[str, Any]:
    """The speedup fields of a submission annotated by ``with_latest_grading`` (a fresh
    one, just created, has none)."""
    return speedup_view(getattr(obj, "speedup", None), getattr(obj, "latest_timing", None))


class SubmissionSerializer(serializers.Serializer[Submission]):
    id = serializers.IntegerField()
    task = serializers.CharField(source="task_version.task.slug")
    task_version = serializers.IntegerField(source="task_version.number")
    model = serializers.CharField(source="model_name")
    run_id = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=SubmissionStatus.choices)
    verdict = serializers.CharField(help_text="Of the latest grading; empty until graded.")
    attempts = serializers.IntegerField()
    timing_mode = serializers.SerializerMethodField()
    speedup = serializers.SerializerMethodField()
    speedup_scored = serializers.SerializerMethodField()
    score_speedup = serializers.SerializerMethodField()
    speedup_significant = serializers.SerializerMethodField()
    speedup_unscored_reason = serializers.SerializerMethodField()
    automatic_points = serializers.SerializerMethodField()
    points = serializers.SerializerMethodField()
    points_available = serializers.SerializerMethodField()
    review_decision = serializers.SerializerMethodField()
    review_score = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    status_changed_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_timing_mode(self, obj: Submission) -> str | None:
        """How the latest grading timed it: cpu_time, wall, cuda_events or interpreter."""
        return _speedup_view(obj)["timing_mode"]

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_speedup(self, obj: Submission) -> float | None:
        """The figure the latest grading measured, scored or not: read speedup_scored
        before taking it for a score (use score_speedup)."""
        return _speedup_view(obj)["speedup"]

    @extend_schema_field(serializers.BooleanField())
    def get_speedup_scored(self, obj: Submission) -> bool:
        """Whether the speedup is a performance measurement that scoring uses: accepted,
        timed on the task's target hardware, not under Triton's interpreter."""
        return bool(_speedup_view(obj)["speedup_scored"])

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_score_speedup(self, obj: Submission) -> float | None:
        """The speedup when it is scored; null otherwise."""
        return _speedup_view(obj)["score_speedup"]

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_speedup_significant(self, obj: Submission) -> bool | None:
        """Whether a scored speedup's interval clears the 5 % margin; null when unscored."""
        return _speedup_view(obj)["speedup_significant"]

    @extend_schema_field(serializers.CharField())
    def get_speedup_unscored_reason(self, obj: Submission) -> str:
        """Why a measured speedup is not scored; empty when it is, or when none was measured."""
        return str(_speedup_view(obj)["speedup_unscored_reason"])

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_automatic_points(self, obj: Submission) -> float | None:
        """Automatic rubric points of the latest grading, as the grader scored them."""
        return getattr(obj, "automatic_points", None)

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_points(self, obj: Submission) -> float | None:
        """Rubric points so far: the automatic ones (a reviewer's overturn replacing the
        grader's) plus the reviewers' points on human criteria once a review is final."""
        return getattr(obj, "points", None)

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_points_available(self, obj: Submission) -> int | None:
        """The rubric's positive points, human criteria included."""
        return getattr(obj, "points_available", None)

    @extend_schema_field(serializers.CharField())
    def get_review_decision(self, obj: Submission) -> str:
        """The final review outcome: accepted, rejected or needs_fix; empty before."""
        return str(getattr(obj, "review_decision", "") or "")

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_review_score(self, obj: Submission) -> float | None:
        """The final review outcome's score in [0, 1] (the mean of its reviews)."""
        return getattr(obj, "review_score", None)


class SubmissionFileOutSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    bytes = serializers.IntegerField()


class SubmissionGradingSerializer(serializers.Serializer[Any]):
    attempt = serializers.IntegerField()
    verdict = serializers.CharField()
    hardware = serializers.CharField()
    target_hardware = serializers.BooleanField(help_text="Ran on the task's target hardware.")
    timing_mode = serializers.CharField()
    speedup = serializers.FloatField(
        allow_null=True, help_text="The measured figure; a score only when speedup_scored."
    )
    speedup_scored = serializers.BooleanField()
    metrics = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="The task kind's named metrics (see the kind's metric list), null where "
        "not measured.",
    )
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    report = serializers.JSONField(help_text="The public grading report (no hidden data).")


class SubmissionCriterionScoreSerializer(serializers.Serializer[Any]):
    key = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    points = serializers.IntegerField(help_text="The criterion's points (negative: a penalty).")
    awarded = serializers.FloatField(allow_null=True)
    met = serializers.BooleanField(allow_null=True)
    detail = serializers.CharField(allow_blank=True)


class SubmissionRubricSerializer(serializers.Serializer[Any]):
    criteria = SubmissionCriterionScoreSerializer(many=True)
    awarded = serializers.FloatField()
    available = serializers.IntegerField()
    score = serializers.FloatField(help_text="Awarded over available, clipped to [0, 1].")


class SubmissionDetailSerializer(SubmissionSerializer):
    files = serializers.SerializerMethodField()
    grading = serializers.SerializerMethodField()
    rubric = serializers.SerializerMethodField()
    review = serializers.SerializerMethodField()

    @extend_schema_field(SubmissionFileOutSerializer(many=True))
    def get_files(self, obj: Submission) -> list[dict[str, Any]]:
        return [{"path": f.path, "bytes": len(f.content.encode())} for f in obj.files.all()]

    @extend_schema_field(SubmissionGradingSerializer(allow_null=True))
    def get_grading(self, obj: Submission) -> dict[str, Any] | None:
        run = self.context.get("run")
        if run is None:
            return None
        return SubmissionGradingSerializer(
            {
                "attempt": run.attempt,
                "verdict": run.verdict,
                "hardware": run.hardware,
                "target_hardware": run.target_hardware,
                "timing_mode": run.timing_mode,
                "speedup": run.speedup,
                "speedup_scored": run_speedup_view(run)["speedup_scored"],
                "metrics": dict(run.metrics or {}),
                "started_at": run.started_at,
                "finished_at": run.finished_at,
                "report": public_report(
                    run.report if isinstance(run.report, dict) else {}, obj.task_version.kind
                ),
            }
        ).data

    @extend_schema_field(SubmissionRubricSerializer(allow_null=True))
    def get_rubric(self, obj: Submission) -> dict[str, Any] | None:
        return rubric_scores(obj, self.context.get("run"))

    @extend_schema_field(serializers.JSONField(allow_null=True))
    def get_review(self, obj: Submission) -> dict[str, Any] | None:
        """The review outcome; null until the reviews app records one."""
        return submission_review_outcome(obj)


class SubmissionSummarySerializer(serializers.Serializer[Any]):
    total = serializers.IntegerField()
    finished = serializers.IntegerField()
    unfinished = serializers.IntegerField()
    by_status = serializers.DictField(child=serializers.IntegerField())
    by_verdict = serializers.DictField(child=serializers.IntegerField())
