"""Webhook endpoints of the requesting user, and their delivery logs."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access, scopes
from accounts.idempotency import idempotent
from accounts.pagination import ApiCursorPagination
from accounts.permissions import HasScope

from . import services
from .api_serializers import (
    NewWebhookEndpointSerializer,
    WebhookDeliverySerializer,
    WebhookEndpointCreateSerializer,
    WebhookEndpointSerializer,
)
from .models import WebhookDelivery, WebhookEndpoint


class EndpointListView(generics.ListAPIView[WebhookEndpoint]):
    """Callback URLs for events about your submissions (submission.graded,
    submission.reviewed), signed per Standard Webhooks."""

    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ, "POST": scopes.SUBMIT}
    serializer_class = WebhookEndpointSerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[WebhookEndpoint]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return WebhookEndpoint.objects.none()
        return WebhookEndpoint.objects.filter(user=access.request_user(self.request))

    @extend_schema(
        request=WebhookEndpointCreateSerializer, responses={201: NewWebhookEndpointSerializer}
    )
    @idempotent(secret_fields=("secret",))
    def post(self, request: Request) -> Response:
        data = WebhookEndpointCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            endpoint, secret = services.endpoint_create(
                user=access.request_user(request),
                url=data.validated_data["url"],
                events=list(data.validated_data["events"]),
                description=data.validated_data.get("description", ""),
            )
        except services.EndpointError as exc:
            raise exceptions.ValidationError({"url": [str(exc)]}) from None
        body = WebhookEndpointSerializer(endpoint).data | {"secret": secret}
        return Response(body, status=status.HTTP_201_CREATED)


class EndpointDetailView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ, "DELETE": scopes.SUBMIT}

    def get_object(self, pk: int) -> WebhookEndpoint:
        return get_object_or_404(WebhookEndpoint, pk=pk, user=access.request_user(self.request))

    @extend_schema(responses=WebhookEndpointSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(WebhookEndpointSerializer(self.get_object(pk)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        services.endpoint_delete(endpoint=self.get_object(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(generics.ListAPIView[WebhookDelivery]):
    """The delivery log of one endpoint: each event, its attempts and the next retry."""

    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ}
    serializer_class = WebhookDeliverySerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[WebhookDelivery]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return WebhookDelivery.objects.none()
        endpoint = get_object_or_404(
            WebhookEndpoint, pk=self.kwargs["pk"], user=access.request_user(self.request)
        )
        return endpoint.deliveries.prefetch_related("attempt_log")
