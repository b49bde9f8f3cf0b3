"""Review endpoints (scope ``review``): take the next item, submit and list
reviews, pairwise judgements. Thin views over reviews.services and selectors."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import access, scopes
from accounts.errors import Conflict
from accounts.idempotency import idempotent
from accounts.pagination import ApiCursorPagination
from accounts.permissions import HasScope

from . import selectors, services
from .api_serializers import (
    ItemSerializer,
    JudgementInSerializer,
    JudgementSerializer,
    PairSerializer,
    ReviewBodySerializer,
    ReviewInSerializer,
    ReviewSerializer,
    item_data,
    rubric_data,
)
from .models import PairOffer, Review, ReviewAssignment


def _api_error(exc: services.ReviewError) -> exceptions.APIException:
    if isinstance(exc, services.NotAllowed):
        return exceptions.PermissionDenied(str(exc))
    if isinstance(exc, services.Conflict):
        return Conflict(str(exc))
    return exceptions.ValidationError({"non_field_errors": [str(exc)]})


def _item_response(request: Request, assignment: ReviewAssignment) -> Response:
    item = selectors.review_item(request.user, assignment.submission)
    return Response(ItemSerializer(item_data(assignment, item)).data)


class ReviewNextView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.REVIEW}

    @extend_schema(request=None, responses={200: ItemSerializer, 204: None})
    def post(self, request: Request) -> Response:
        """Claim the next item of your queue (or get back the one you hold): 204
        when nothing is left. The claim holds for the task's claim time."""
        try:
            assignment = services.assignment_claim_next(reviewer=access.request_user(request))
        except services.ReviewError as exc:
            raise _api_error(exc) from None
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return _item_response(request, assignment)


def _own_assignment(request: Request, pk: int) -> ReviewAssignment:
    assignment = selectors.assignment_for(request.user, pk)
    if assignment is None:
        raise Http404
    return assignment


class ItemDetailView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.REVIEW}

    @extend_schema(responses=ItemSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """An item you hold or reviewed."""
        return _item_response(request, _own_assignment(request, pk))


class ItemReleaseView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.REVIEW}

    @extend_schema(request=None, responses={204: None})
    def post(self, request: Request, pk: int) -> Response:
        """Hand a claimed item back to the queue."""
        assignment = _own_assignment(request, pk)
        try:
            services.assignment_release(
                assignment_id=assignment.pk, reviewer=access.request_user(request)
            )
        except services.ReviewError as exc:
            raise _api_error(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


def _reviews(request: Request) -> QuerySet[Review]:
    return selectors.reviews_for_user(request.user).order_by("-id")


class ReviewListView(generics.ListAPIView[Review]):
    """Your reviews, newest first (an admin sees everyone's)."""

    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.REVIEW, "POST": scopes.REVIEW}
    serializer_class = ReviewSerializer
    pagination_class = ApiCursorPagination

    def get_queryset(self) -> QuerySet[Review]:
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Review.objects.none()
        return _reviews(self.request)

    @extend_schema(request=ReviewInSerializer, responses={201: ReviewSerializer})
    @idempotent()
    def post(self, request: Request) -> Response:
        """Submit the review of a claimed item: a level for every human criterion,
        optional overturns (with reasons) of automatic ones, feedback and a decision."""
        body = ReviewInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment = _own_assignment(request, body.validated_data["item"])
        try:
            review = services.review_submit(
                assignment_id=assignment.pk,
                reviewer=access.request_user(request),
                data=body.to_input(),
            )
        except services.ReviewError as exc:
            raise _api_error(exc) from None
        return Response(
            ReviewSerializer(review).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/v1/reviews/{review.pk}/"},
        )


class ReviewDetailView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": scopes.REVIEW, "PUT": scopes.REVIEW}

    def _review(self, request: Request, pk: int) -> Review:
        review = _reviews(request).filter(pk=pk).first()
        if review is None:
            raise Http404
        return review

    @extend_schema(responses=ReviewSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(ReviewSerializer(self._review(request, pk)).data)

    @extend_schema(request=ReviewBodySerializer, responses=ReviewSerializer)
    def put(self, request: Request, pk: int) -> Response:
        """Replace your review while the outcome is still open (409 once final)."""
        review = self._review(request, pk)
        body = ReviewBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            review = services.review_edit(
                review_id=review.pk, editor=access.request_user(request), data=body.to_input()
            )
        except services.ReviewError as exc:
            raise _api_error(exc) from None
        return Response(ReviewSerializer(_reviews(request).get(pk=review.pk)).data)


def pair_data(request: Request, offer: PairOffer) -> dict[str, Any]:
    sides = selectors.pair_item(request.user, offer)
    first = sides["a"]
    rows = rubric_data(first["rubric"])
    return {
        "id": offer.pk,
        "task": first["task"],
        "criteria": [row for row in rows if row["kind"] == "human"],
        **{
            side: {
                "files": [{"path": p, "content": c} for p, c in sorted(item["files"].items())],
                "report": item["report"],
            }
            for side, item in sides.items()
        },
    }


class PairNextView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.REVIEW}

    @extend_schema(request=None, responses={200: PairSerializer, 204: None})
    def post(self, request: Request) -> Response:
        """The next pair to judge (or your open one): two accepted submissions to the
        same task version, blind; 204 when there is none."""
        try:
            offer = services.pair_offer_next(reviewer=access.request_user(request))
        except services.ReviewError as exc:
            raise _api_error(exc) from None
        if offer is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        offer = selectors.open_pair(request.user, offer.pk)
        assert offer is not None
        return Response(PairSerializer(pair_data(request, offer)).data)


class PairJudgementView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": scopes.REVIEW}

    @extend_schema(request=JudgementInSerializer, responses={201: JudgementSerializer})
    @idempotent()
    def post(self, request: Request, pair_id: Any) -> Response:
        """Say which of the pair is better, overall and per human criterion, and why."""
        if selectors.open_pair(request.user, pair_id) is None:
            raise Http404
        body = JudgementInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            judgement = services.pairwise_judge(
                offer_id=pair_id, reviewer=access.request_user(request), data=body.to_input()
            )
        except services.ReviewError as exc:
            raise _api_error(exc) from None
        data = {
            "id": judgement.pk,
            "pair": pair_id,
            "winner": judgement.winner,
            "criterion_winners": judgement.criterion_winners,
            "reason": judgement.reason,
            "created_at": judgement.created_at,
        }
        return Response(JudgementSerializer(data).data, status=status.HTTP_201_CREATED)
