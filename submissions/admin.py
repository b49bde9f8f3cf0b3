from django.contrib import admin

from .models import GradingRun, Submission, SubmissionFile


class SubmissionFileInline(admin.TabularInline):
    model = SubmissionFile
    extra = 0


class GradingRunInline(admin.TabularInline):
    """Every attempt with its verdict and reason: why a submission failed is here."""

    model = GradingRun
    extra = 0
    fields = ["attempt", "verdict", "reason", "hardware", "finished_at"]
    readonly_fields = ["attempt", "verdict", "reason", "hardware", "finished_at"]
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = [
        "id", "task_version", "submitter", "model_name", "status", "verdict", "attempts",
    ]  # fmt: skip
    list_filter = ["status", "verdict"]
    search_fields = ["model_name", "run_id", "task_version__task__slug"]
    readonly_fields = ["status", "verdict", "attempts", "status_changed_at"]
    inlines = [GradingRunInline, SubmissionFileInline]


@admin.register(GradingRun)
class GradingRunAdmin(admin.ModelAdmin):
    list_display = [
        "submission", "attempt", "verdict", "reason", "speedup", "timing_mode", "hardware",
    ]  # fmt: skip
    list_filter = ["verdict", "timing_mode"]


@admin.register(SubmissionFile)
class SubmissionFileAdmin(admin.ModelAdmin):
    list_display = ["path", "submission"]
    search_fields = ["path"]
