from django.contrib import admin

from .models import (
    Task,
    TaskFile,
    TaskReview,
    TaskReviewComment,
    TaskVersion,
    ValidationResult,
    ValidationRun,
)


class DraftFileInline(admin.TabularInline):
    model = TaskFile
    fk_name = "task"
    fields = ["path", "visibility", "role", "expected_verdict"]
    extra = 0


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "kind", "difficulty", "hardware", "status", "owner"]
    list_filter = ["kind", "status", "difficulty", "hardware"]
    search_fields = ["slug", "title"]
    readonly_fields = ["status", "current_version", "created_at", "updated_at"]
    inlines = [DraftFileInline]


@admin.register(TaskVersion)
class TaskVersionAdmin(admin.ModelAdmin):
    """Read-only: versions are frozen."""

    list_display = ["task", "number", "content_hash", "created_at"]
    search_fields = ["task__slug"]

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(TaskFile)
class TaskFileAdmin(admin.ModelAdmin):
    list_display = ["path", "task", "version", "visibility", "role"]
    list_filter = ["visibility", "role"]
    search_fields = ["path", "task__slug", "version__task__slug"]


_RESULT_FIELDS = ("path", "role", "expected_verdict", "verdict")


class ValidationResultInline(admin.TabularInline):
    model = ValidationResult
    fields = _RESULT_FIELDS
    readonly_fields = _RESULT_FIELDS
    extra = 0


@admin.register(ValidationRun)
class ValidationRunAdmin(admin.ModelAdmin):
    list_display = ["task", "status", "created_by", "created_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["task__slug"]
    readonly_fields = ["task", "content_hash", "status", "created_by", "finished_at"]
    inlines = [ValidationResultInline]


@admin.register(ValidationResult)
class ValidationResultAdmin(admin.ModelAdmin):
    list_display = ["path", "run", "expected_verdict", "verdict"]
    list_filter = ["verdict"]


_COMMENT_FIELDS = ("path", "line", "author", "body")


class TaskReviewCommentInline(admin.TabularInline):
    model = TaskReviewComment
    fields = _COMMENT_FIELDS
    readonly_fields = _COMMENT_FIELDS
    extra = 0


@admin.register(TaskReview)
class TaskReviewAdmin(admin.ModelAdmin):
    """Read-only: a review records what was decided on which content."""

    list_display = ["task", "decision", "reviewer", "created_at"]
    list_filter = ["decision"]
    search_fields = ["task__slug", "reviewer__username"]
    readonly_fields = ["task", "reviewer", "decision", "content_hash", "version", "manifest"]
    exclude = ["files"]
    inlines = [TaskReviewCommentInline]

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(TaskReviewComment)
class TaskReviewCommentAdmin(admin.ModelAdmin):
    list_display = ["task", "path", "line", "author", "review", "created_at"]
    search_fields = ["task__slug", "path", "body"]
    list_select_related = ["task", "author", "review"]
