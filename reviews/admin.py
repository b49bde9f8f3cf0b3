from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import (
    AuditEvent,
    LineComment,
    PairOffer,
    PairwiseJudgement,
    Review,
    ReviewAssignment,
    ReviewOutcome,
    ReviewPolicy,
    ReviewScore,
)


@admin.register(ReviewPolicy)
class ReviewPolicyAdmin(admin.ModelAdmin):
    list_display = [
        "task",
        "reviews_required",
        "review_failures",
        "claim_minutes",
        "disagreement_threshold",
    ]
    search_fields = ["task__slug"]
    raw_id_fields = ["task"]


@admin.register(ReviewAssignment)
class ReviewAssignmentAdmin(admin.ModelAdmin):
    """Read-only: claims change through the review services (and their audit trail)."""

    list_display = ["id", "submission", "slot", "status", "reviewer", "expires_at"]
    list_filter = ["status"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReviewScoreInline(admin.TabularInline):
    model = ReviewScore
    extra = 0
    can_delete = False
    readonly_fields = ["criterion", "points", "automatic_points", "overturned", "overturn_reason"]


class LineCommentInline(admin.TabularInline):
    model = LineComment
    extra = 0
    can_delete = False
    readonly_fields = ["path", "line", "line_text", "body"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    """Read-only: a change here would bypass the audit trail."""

    list_display = ["id", "submission", "reviewer", "decision", "score", "created_at"]
    list_filter = ["decision"]
    inlines = [ReviewScoreInline, LineCommentInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ReviewScore)
class ReviewScoreAdmin(admin.ModelAdmin):
    list_display = ["review", "criterion", "points", "overturned"]
    list_filter = ["overturned"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LineComment)
class LineCommentAdmin(admin.ModelAdmin):
    list_display = ["review", "path", "line"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ReviewOutcome)
class ReviewOutcomeAdmin(admin.ModelAdmin):
    list_display = ["submission", "status", "decision", "score", "score_spread", "review_count"]
    list_filter = ["status", "decision"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PairwiseJudgement)
class PairwiseJudgementAdmin(admin.ModelAdmin):
    list_display = ["id", "task_version", "submission_a", "submission_b", "winner", "reviewer"]
    list_filter = ["winner"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PairOffer)
class PairOfferAdmin(admin.ModelAdmin):
    list_display = ["id", "reviewer", "submission_a", "submission_b", "judgement", "skipped_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "actor", "verb", "target_type", "target_id", "submission"]
    list_filter = ["verb", "target_type"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
