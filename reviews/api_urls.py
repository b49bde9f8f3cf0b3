"""Review API routes, included at /api/v1/reviews/ by benchwright.api_urls."""

from django.urls import path

from . import api

urlpatterns = [
    path("", api.ReviewListView.as_view(), name="api-review-list"),
    path("next/", api.ReviewNextView.as_view(), name="api-review-next"),
    path("items/<id:pk>/", api.ItemDetailView.as_view(), name="api-review-item"),
    path("items/<id:pk>/release/", api.ItemReleaseView.as_view(), name="api-review-release"),
    path("pairs/next/", api.PairNextView.as_view(), name="api-review-pair-next"),
    path(
        "pairs/<uuid:pair_id>/judgement/",
        api.PairJudgementView.as_view(),
        name="api-review-pair-judgement",
    ),
    path("<id:pk>/", api.ReviewDetailView.as_view(), name="api-review-detail"),
]
