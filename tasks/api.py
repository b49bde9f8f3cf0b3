"""The task catalog for API clients: published tasks and their prompt-visible content."""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import scopes
from accounts.pagination import ApiCursorPagination, query_dict
from accounts.permissions import HasScope

from .api_serializers import TaskDetailSerializer, TaskFilterSerializer, TaskSummarySerializer
from .models import Task, TaskStatus, Visibility


def published_tasks() -> QuerySet[Task]:
    """Published tasks with a current version: the API's catalog, the same for every role
    (authors and reviewers see drafts and hidden files in the browser, not here)."""
    return Task.objects.filter(
        status=TaskStatus.PUBLISHED, current_version__isnull=False
    ).select_related("current_version")


class TaskListView(generics.ListAPIView[Task]):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ}
    serializer_class = TaskSummarySerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[Task]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Task.objects.none()
        params = TaskFilterSerializer(data=query_dict(self.request))
        params.is_valid(raise_exception=True)
        tasks = published_tasks()
        for field in ("kind", "difficulty", "hardware"):
            if field in params.validated_data:
                tasks = tasks.filter(**{f"current_version__{field}": params.validated_data[field]})
        for tag in (params.validated_data.get("tags") or "").split(","):
            if not tag:
                continue
            if connection.vendor == "postgresql":
                tasks = tasks.filter(current_version__tags__contains=[tag])
            else:  # SQLite (development) has no JSON containment; match the quoted element.
                tasks = tasks.filter(current_version__tags__icontains=f'"{tag}"')
        return tasks

    @extend_schema(parameters=[TaskFilterSerializer])
    def get(self, request: Request) -> Response:
        return super().get(request)


class TaskDetailView(APIView):
    """A published task as a solver sees it: statement, prompt files, the grading
    settings that are safe to show, and the rubric. Never hidden files."""

    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ}

    @extend_schema(responses=TaskDetailSerializer)
    def get(self, request: Request, slug: str) -> Response:
        task = published_tasks().filter(slug=slug).first()
        if task is None or task.current_version is None:
            raise Http404
        version = task.current_version
        rubric = getattr(version, "rubric", None)
        context = {
            "prompt_files": version.files.filter(visibility=Visibility.PROMPT).order_by("path"),
            "criteria": list(rubric.criteria.order_by("position")) if rubric else [],
        }
        return Response(TaskDetailSerializer(task, context=context).data)
