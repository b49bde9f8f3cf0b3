from django.contrib import admin

from .models import GradingRun, Submission, SubmissionFile


class SubmissionFileInline(admin.TabularInline):
    model = SubmissionFile
    extra = 0


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "task_version", "submitter", "model_name", "status", "verdict"]
    list_filter = ["status", "verdict"]
    search_fields = ["model_name", "run_id", "task_version__task__slug"]
    readonly_fields = ["status", "verdict", "attempts", "status_changed_at"]
    inlines = [SubmissionFileInline]


@admin.register(GradingRun)
class GradingRunAdmin(admin.ModelAdmin):
    list_display = ["submission", "attempt", "verdict", "speedup", "timing_mode", "hardware"]
    list_filter = ["verdict", "timing_mode"]


@admin.register(SubmissionFile)
class SubmissionFileAdmin(admin.ModelAdmin):
    list_display = ["path", "submission"]
    search_fields = ["path"]
