"""OpenAPI schema: the error shape on every operation, and the bearer-token scheme."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="Stable, machine-readable (invalid, not_found, …).")
    message = serializers.CharField(help_text="For people.")
    fields = serializers.JSONField(  # type: ignore[assignment]  # DRF takes it as a field
        required=False, help_text="Validation errors per field, nested as the request was."
    )


class ErrorSerializer(serializers.Serializer[Any]):
    error = ErrorDetailSerializer()


ERRORS = {
    "400": "The request is invalid (body, query or header).",
    "401": "No credentials, or a token that is unknown, expired or revoked.",
    "403": "The token lacks the scope, or the user may not do this.",
    "404": "Not found, or not visible to this user.",
    "429": "Too many requests, or a daily quota is spent; see Retry-After.",
}
WRITE_ERRORS = {
    "409": "The resource is not in a state that allows this.",
    "413": "The request body is too large.",
    "415": "The body is not application/json.",
    "422": "The Idempotency-Key was used with a different request.",
}

IDEMPOTENCY_KEY = OpenApiParameter(
    name="Idempotency-Key",
    type=str,
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "Retrying with the same key and body returns the original response and creates "
        "nothing; the same key with another body gets 422. Keys are per user, kept 24 h."
    ),
)


class ApiAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        errors = dict(ERRORS)
        if self.method in ("POST", "PUT", "PATCH"):
            errors |= WRITE_ERRORS
        for code, description in errors.items():
            if code not in responses:
                response = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                responses[code] = {**response, "description": description}
        return responses

    def get_override_parameters(self) -> list[Any]:
        parameters = list(super().get_override_parameters())
        if self.method == "POST":
            parameters.append(IDEMPOTENCY_KEY)
        return parameters


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.TokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (bw_…), from `manage.py create_api_token` or "
            "POST /api/v1/tokens/.",
        }
