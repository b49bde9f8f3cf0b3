from __future__ import annotations

from typing import Any

from rest_framework import serializers

from . import scopes
from .fields import StrictCharField
from .models import ApiToken


class TokenSerializer(serializers.ModelSerializer[ApiToken]):
    state = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "scopes",
            "state",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
            "max_submissions_per_day",
            "max_sandbox_seconds_per_day",
        ]
        read_only_fields = fields

    def get_state(self, obj: ApiToken) -> str:
        if obj.revoked_at is not None:
            return "revoked"
        return "active" if obj.is_usable() else "expired"


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(help_text="Shown once: store it now.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class TokenCreateSerializer(serializers.Serializer[Any]):
    name = StrictCharField(max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=scopes.ALL), min_length=1, max_length=5
    )
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class ApiUsageSerializer(serializers.Serializer[Any]):
    submissions_today = serializers.IntegerField()
    submissions_per_day = serializers.IntegerField()
    sandbox_seconds_today = serializers.FloatField()
    sandbox_seconds_per_day = serializers.IntegerField()


class MeSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    scopes = serializers.ListField(child=serializers.CharField())
    token = TokenSerializer(allow_null=True)
    usage = ApiUsageSerializer()
