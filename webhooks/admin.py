from typing import Any

from django.contrib import admin

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "user", "events", "is_active", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["url", "user__username"]
    exclude = ["secret"]

    def formfield_for_dbfield(self, db_field: Any, request: Any, **kwargs: Any) -> Any:
        if db_field.name == "url":
            kwargs["assume_scheme"] = "https"  # what production requires anyway
        return super().formfield_for_dbfield(db_field, request, **kwargs)


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["webhook_id", "endpoint", "event", "status", "attempts", "next_attempt_at"]
    list_filter = ["status", "event"]
    inlines = [WebhookAttemptInline]


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(admin.ModelAdmin):
    list_display = ["delivery", "number", "status_code", "duration_ms", "created_at"]
