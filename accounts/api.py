"""API token management (own tokens only) and ``/me``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from . import access, scopes, services
from .idempotency import idempotent
from .models import ApiToken
from .pagination import ApiCursorPagination
from .permissions import HasScope
from .serializers import MeSerializer, NewTokenSerializer, TokenCreateSerializer, TokenSerializer


class TokenListView(generics.ListAPIView[ApiToken]):
    """Your API tokens (never their secrets), and creating a new one.

    A token can create tokens only with scopes it holds itself and an expiry no
    later than its own; a browser session may grant any scope its roles allow.
    """

    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ, "POST": None}
    serializer_class = TokenSerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[ApiToken]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return ApiToken.objects.none()
        return ApiToken.objects.filter(user=access.request_user(self.request))

    @extend_schema(request=TokenCreateSerializer, responses={201: NewTokenSerializer})
    @idempotent(secret_fields=("token",))
    def post(self, request: Request) -> Response:
        data = TokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        wanted = list(data.validated_data["scopes"])
        expires_at = data.validated_data.get("expires_at")
        current = access.request_token(request)
        if current is not None:
            beyond = sorted(set(wanted) - access.request_scopes(request))
            if beyond:
                raise exceptions.PermissionDenied(
                    f"a token cannot grant scopes it does not hold: {', '.join(beyond)}"
                )
            if current.expires_at is not None and (
                expires_at is None or expires_at > current.expires_at
            ):
                expires_at = current.expires_at
        try:
            row, token = services.token_create(
                user=access.request_user(request),
                name=data.validated_data["name"],
                scopes=wanted,
                expires_at=expires_at,
            )
        except services.TokenError as exc:
            raise exceptions.ValidationError({exc.field: [str(exc)]}) from None
        body = TokenSerializer(row).data | {"token": token}
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ, "DELETE": None}

    def get_object(self, pk: int) -> ApiToken:
        return get_object_or_404(ApiToken, pk=pk, user=access.request_user(self.request))

    @extend_schema(responses=TokenSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(TokenSerializer(self.get_object(pk)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        """Revoke the token at once; it stays listed as revoked."""
        services.token_revoke(token=self.get_object(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    """Who you are, what this request may do, and today's quota use."""

    permission_classes = [HasScope]
    required_scopes: dict[str, Any] = {"GET": None}

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        subject = access.quota_subject(request)
        today, start, _ = services.day_bounds()
        token = access.request_token(request)
        body = {
            "username": request.user.get_username(),
            "roles": sorted(access.request_roles(request)),
            "scopes": [s for s in scopes.ALL if s in access.request_scopes(request)],
            "token": TokenSerializer(token).data if token is not None else None,
            "usage": {
                "submissions_today": services.submissions_used(subject, today),
                "submissions_per_day": subject.submissions_per_day,
                "sandbox_seconds_today": services.sandbox_seconds_used(subject, start),
                "sandbox_seconds_per_day": subject.sandbox_seconds_per_day,
            },
        }
        return Response(body)
