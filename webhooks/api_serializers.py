from __future__ import annotations

from typing import Any

from rest_framework import serializers

from accounts.fields import StrictCharField, StrictURLField

from .models import Event, WebhookAttempt, WebhookDelivery, WebhookEndpoint


class WebhookEndpointSerializer(serializers.ModelSerializer[WebhookEndpoint]):
    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "description", "is_active", "created_at"]
        read_only_fields = fields


class NewWebhookEndpointSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(help_text="whsec_…: shown once; verify signatures with it.")

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookEndpointCreateSerializer(serializers.Serializer[Any]):
    url = StrictURLField(max_length=500)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=Event.choices),
        required=False,
        default=list(Event.values),
        min_length=1,
        max_length=len(Event.values),
    )
    description = StrictCharField(max_length=200, required=False, allow_blank=True)


class WebhookAttemptSerializer(serializers.ModelSerializer[WebhookAttempt]):
    class Meta:
        model = WebhookAttempt
        fields = ["number", "status_code", "response_excerpt", "error", "duration_ms", "created_at"]
        read_only_fields = fields


class WebhookDeliverySerializer(serializers.ModelSerializer[WebhookDelivery]):
    webhook_id = serializers.CharField(help_text="The webhook-id header; the same on retries.")
    attempt_log = WebhookAttemptSerializer(many=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "webhook_id",
            "event",
            "status",
            "attempts",
            "last_status_code",
            "next_attempt_at",
            "delivered_at",
            "created_at",
            "attempt_log",
        ]
        read_only_fields = fields
