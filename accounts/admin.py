from django.contrib import admin

from .models import ApiToken, IdempotencyRecord


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "user", "scopes", "expires_at", "revoked_at", "last_used_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    # The hash is useless to read and the prefix is its lookup key: neither is edited here.
    readonly_fields = ["prefix", "token_hash", "last_used_at"]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):
    list_display = ["key", "user", "response_status", "created_at", "expires_at"]
    search_fields = ["key", "user__username"]
