"""Serializer fields that take JSON strings only.

DRF's CharField turns a number into its text (``5`` becomes ``"5"``); a client
that sends a number where the schema says string has a bug worth a 400.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictStringMixin:
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid")  # type: ignore[attr-defined]
        return super().to_internal_value(data)  # type: ignore[misc]


class StrictCharField(StrictStringMixin, serializers.CharField):
    default_error_messages = {"invalid": "Not a valid string."}


class StrictSlugField(StrictStringMixin, serializers.SlugField):
    default_error_messages = {"invalid": "Not a valid string."}


class StrictURLField(StrictStringMixin, serializers.URLField):
    default_error_messages = {"invalid": "Enter a valid URL."}
