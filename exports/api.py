"""Export endpoints under /api/v1/exports/. Thin views over exports.services and
exports.selectors; who may do what is decided in ``exports.selectors``.

Every endpoint needs a user who may export (an admin or an exporter); a token
also needs the ``export`` scope.
"""

from __future__ import annotations

from typing import Any

from django.core.files.storage import default_storage
from django.db.models import QuerySet
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access, scopes
from accounts.errors import Conflict
from accounts.idempotency import idempotent
from accounts.pagination import ApiCursorPagination
from accounts.permissions import MissingScope
from accounts.schema import ErrorSerializer

from . import selectors, services
from .api_serializers import (
    DefinitionContentSerializer,
    DefinitionCreateSerializer,
    DefinitionSerializer,
    SnapshotSerializer,
    spec_data,
)
from .models import ExportDefinition, Snapshot, SnapshotStatus
from .spec import SpecError


class CanExport(BasePermission):
    """An admin or exporter; through a token, one with the ``export`` scope.

    The token's own scopes are checked here rather than through
    ``accounts.access.request_scopes``, whose role map grants ``export`` to
    admins only: exporters are a group, not one of the four roles."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user.is_authenticated:
            raise exceptions.NotAuthenticated()
        if not selectors.may_export(request.user):
            raise exceptions.PermissionDenied("exports are for admins and exporters")
        token = access.request_token(request)
        if token is not None and scopes.EXPORT not in token.scopes:
            raise MissingScope(f"this request needs the {scopes.EXPORT!r} scope")
        return True


def _spec_errors(exc: SpecError) -> exceptions.ValidationError:
    return exceptions.ValidationError(
        {key or "non_field_errors": v for key, v in exc.errors.items()}
    )


def visible_definition(request: Request, slug: str) -> ExportDefinition:
    """The definition if this user may see it; 404 otherwise, never 403."""
    definition = selectors.definitions_for_user(request.user).filter(slug=slug).first()
    if definition is None:
        raise Http404
    return definition


def visible_snapshot(request: Request, pk: int) -> Snapshot:
    snapshot = selectors.snapshots_for_user(request.user).filter(pk=pk).first()
    if snapshot is None:
        raise Http404
    return snapshot


class DefinitionListView(generics.ListAPIView[ExportDefinition]):
    """Your export definitions (an admin's: all), and defining a new one."""

    permission_classes = [CanExport]
    serializer_class = DefinitionSerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[ExportDefinition]:
        if getattr(self, "swagger_fake_view", False):
            return ExportDefinition.objects.none()
        return selectors.definitions_for_user(self.request.user).prefetch_related("versions")

    @extend_schema(request=DefinitionCreateSerializer, responses={201: DefinitionSerializer})
    @idempotent()
    def post(self, request: Request) -> Response:
        data = DefinitionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            definition = services.definition_create(
                owner=access.request_user(request),
                slug=data.validated_data["slug"],
                data=spec_data(data.validated_data),
            )
        except SpecError as exc:
            raise _spec_errors(exc) from None
        return Response(DefinitionSerializer(definition).data, status=status.HTTP_201_CREATED)


class DefinitionDetailView(APIView):
    permission_classes = [CanExport]

    @extend_schema(responses=DefinitionSerializer)
    def get(self, request: Request, slug: str) -> Response:
        return Response(DefinitionSerializer(visible_definition(request, slug)).data)

    @extend_schema(request=DefinitionContentSerializer, responses=DefinitionSerializer)
    def put(self, request: Request, slug: str) -> Response:
        """Edit: new content becomes a new version (earlier snapshots keep theirs)."""
        definition = visible_definition(request, slug)
        data = DefinitionContentSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.definition_update(
                definition_id=definition.pk,
                user=access.request_user(request),
                data=spec_data(data.validated_data),
            )
        except services.NotAllowed as exc:
            raise exceptions.PermissionDenied(str(exc)) from None
        except SpecError as exc:
            raise _spec_errors(exc) from None
        return Response(DefinitionSerializer(visible_definition(request, slug)).data)


class SnapshotListView(generics.ListAPIView[Snapshot]):
    """A definition's snapshots, and starting a new one from its current version."""

    permission_classes = [CanExport]
    serializer_class = SnapshotSerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[Snapshot]:
        if getattr(self, "swagger_fake_view", False):
            return Snapshot.objects.none()
        definition = visible_definition(self.request, self.kwargs["slug"])
        return selectors.snapshots_of(self.request.user, definition)

    @extend_schema(request=None, responses={202: SnapshotSerializer})
    @idempotent()
    def post(self, request: Request, slug: str) -> Response:
        """Queue a build; poll the snapshot until it has succeeded, then download it."""
        definition = visible_definition(request, slug)
        snapshot = services.snapshot_create(
            definition=definition, user=access.request_user(request)
        )
        snapshot = Snapshot.objects.select_related("version__definition").get(pk=snapshot.pk)
        return Response(SnapshotSerializer(snapshot).data, status=status.HTTP_202_ACCEPTED)


class SnapshotDetailView(APIView):
    permission_classes = [CanExport]

    @extend_schema(responses=SnapshotSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """Status and progress (items read of the total, rows written)."""
        return Response(SnapshotSerializer(visible_snapshot(request, pk)).data)


class SnapshotDownloadView(APIView):
    permission_classes = [CanExport]

    @extend_schema(
        responses={
            (200, "application/gzip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The snapshot as a tar.gz."
            ),
            409: OpenApiResponse(ErrorSerializer, description="The snapshot is not built (yet)."),
        }
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        snapshot = visible_snapshot(request, pk)
        if snapshot.status != SnapshotStatus.SUCCEEDED:
            raise Conflict(f"snapshot {pk} is {snapshot.status}, not built")
        return snapshot_file_response(snapshot)


def snapshot_file_response(snapshot: Snapshot) -> FileResponse:
    """The tar.gz streamed from storage (shared with the browser's download)."""
    name = snapshot.archive_name.rsplit("/", 1)[-1]
    slug = snapshot.version.definition.slug
    response = FileResponse(
        default_storage.open(snapshot.archive_name, "rb"),
        as_attachment=True,
        filename=f"{slug}-v{snapshot.version.number}-{name}",
        content_type="application/gzip",
    )
    response["X-Content-SHA256"] = snapshot.archive_sha256
    return response
