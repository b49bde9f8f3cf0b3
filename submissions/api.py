"""Submission endpoints: thin views over submissions.services and submissions.selectors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access, scopes
from accounts import services as account_services
from accounts.idempotency import idempotent
from accounts.pagination import ApiCursorPagination, query_dict
from accounts.permissions import HasScope
from benchwright import roles
from tasks.api import published_tasks
from tasks.models import TaskVersion

from . import selectors, services
from .api_serializers import (
    SubmissionBatchInSerializer,
    SubmissionBatchOutSerializer,
    SubmissionDetailSerializer,
    SubmissionFilterSerializer,
    SubmissionInSerializer,
    SubmissionSerializer,
    SubmissionSummarySerializer,
)
from .models import Submission


def visible_submissions(request: Request) -> QuerySet[Submission]:
    return selectors.submissions_for_user(
        request.user, scopes=access.request_scopes(request), roles=access.request_roles(request)
    )


def visible_submission(request: Request, pk: int) -> Submission:
    """The submission if this request may see it; 404 otherwise (never 403, which
    would tell an outsider that it exists)."""
    submission = (
        visible_submissions(request)
        .select_related("task_version__task", "task_version__rubric")
        .filter(pk=pk)
        .first()
    )
    if submission is None:
        raise Http404
    return submission


def published_versions(slugs: Iterable[str]) -> dict[str, TaskVersion]:
    """Each slug's current version, for published tasks only."""
    versions = {}
    for task in published_tasks().filter(slug__in=set(slugs)):
        if task.current_version is not None:
            task.current_version.task = task  # spares a query per response
            versions[task.slug] = task.current_version
    return versions


def filtered(request: Request) -> QuerySet[Submission]:
    params = SubmissionFilterSerializer(data=query_dict(request))
    params.is_valid(raise_exception=True)
    return selectors.submissions_filtered(visible_submissions(request), **params.filters())


class SubmissionListView(generics.ListAPIView[Submission]):
    """Your submissions (and, with the matching scope, those you may review or that
    were made to your tasks), newest first, with cursor pagination."""

    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ, "POST": scopes.SUBMIT}
    serializer_class = SubmissionSerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[Submission]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Submission.objects.none()
        return selectors.with_latest_grading(filtered(self.request))

    @extend_schema(parameters=[SubmissionFilterSerializer])
    def get(self, request: Request) -> Response:
        return super().get(request)

    @extend_schema(request=SubmissionInSerializer, responses={201: SubmissionSerializer})
    @idempotent()
    def post(self, request: Request) -> Response:
        """Submit a solution to a published task; it is pinned to the task's current
        version and queued for grading."""
        data = SubmissionInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = data.validated_data
        version = published_versions([item["task"]]).get(item["task"])
        if version is None:
            raise exceptions.ValidationError({"task": [f"no published task {item['task']!r}"]})
        subject = access.quota_subject(request)
        with account_services.quota_reserved(subject=subject, count=1), transaction.atomic():
            submission = services.submission_create(
                version=version,
                submitter=access.request_user(request),
                files={f["path"]: f["content"] for f in item["files"]},
                model_name=item["model"],
                run_id=item["run_id"],
                labels=item["labels"],
                api_token_id=subject.token_id,
            )
        return Response(
            SubmissionSerializer(submission).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/v1/submissions/{submission.pk}/"},
        )


class SubmissionBatchView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.SUBMIT}

    @property
    def max_body_bytes(self) -> int:
        return int(settings.API_MAX_BATCH_BODY_BYTES)

    @extend_schema(
        request=SubmissionBatchInSerializer, responses={201: SubmissionBatchOutSerializer}
    )
    @idempotent()
    def post(self, request: Request) -> Response:
        """Submit up to 1,000 solutions at once: all are valid and created in one
        transaction, or none is and the errors say which (by index)."""
        data = SubmissionBatchInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entries = data.validated_data["submissions"]
        versions = published_versions(e["task"] for e in entries)
        missing = {
            str(i): {"task": [f"no published task {e['task']!r}"]}
            for i, e in enumerate(entries)
            if e["task"] not in versions
        }
        if missing:
            raise exceptions.ValidationError({"submissions": missing})
        items = [
            services.NewSubmission(
                version=versions[e["task"]],
                files={f["path"]: f["content"] for f in e["files"]},
                model_name=e["model"],
                run_id=e["run_id"],
                labels=e["labels"],
            )
            for e in entries
        ]
        subject = access.quota_subject(request)
        with account_services.quota_reserved(subject=subject, count=len(items)):
            created = services.submissions_create_batch(
                submitter=access.request_user(request), items=items, api_token_id=subject.token_id
            )
        body = {
            "count": len(created),
            "submissions": [
                {"id": s.pk, "task": e["task"], "status": s.status}
                for s, e in zip(created, entries, strict=True)
            ],
        }
        return Response(body, status=status.HTTP_201_CREATED)


class SubmissionDetailView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ}

    @extend_schema(responses=SubmissionDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """Status, verdict, the public grading report, rubric scores and the review."""
        submission = (
            selectors.with_latest_grading(visible_submissions(request))
            .select_related("task_version__rubric")
            .filter(pk=pk)
            .first()
        )
        if submission is None:
            raise Http404
        run = selectors.latest_grading_run(submission)
        context: dict[str, Any] = {"run": run}
        return Response(SubmissionDetailSerializer(submission, context=context).data)


class SubmissionSummaryView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.READ}

    @extend_schema(parameters=[SubmissionFilterSerializer], responses=SubmissionSummarySerializer)
    def get(self, request: Request) -> Response:
        """Counts by status and verdict over the same filters as the list: one small
        request to poll while a run is graded."""
        return Response(
            SubmissionSummarySerializer(selectors.submissions_summary(filtered(request))).data
        )


class SubmissionCancelView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.SUBMIT}

    @extend_schema(request=None, responses=SubmissionSerializer)
    @idempotent()
    def post(self, request: Request, pk: int) -> Response:
        """Cancel a queued submission (its submitter, or an admin); 409 once it runs."""
        submission = visible_submission(request, pk)
        if submission.submitter_id != request.user.pk and not roles.is_admin(request.user):
            raise exceptions.PermissionDenied("only the submitter or an admin can cancel")
        services.submission_cancel(submission=submission)
        submission.refresh_from_db()
        return Response(SubmissionSerializer(submission).data)


class SubmissionRegradeView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.AUTHOR}

    @extend_schema(request=None, responses=SubmissionSerializer)
    @idempotent()
    def post(self, request: Request, pk: int) -> Response:
        """Queue a finished submission for a fresh grading (an admin, or the task's author)."""
        submission = visible_submission(request, pk)
        owner_id = submission.task_version.task.owner_id
        if owner_id != request.user.pk and not roles.is_admin(request.user):
            raise exceptions.PermissionDenied("only the task's author or an admin can regrade")
        services.submission_regrade(submission=submission)
        submission.refresh_from_db()
        return Response(SubmissionSerializer(submission).data)
