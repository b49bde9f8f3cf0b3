"""Routes of the REST API, included at /api/ by benchwright.urls."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts import api as account_api
from accounts.errors import api_not_found
from submissions import api as submission_api
from tasks import api as task_api
from webhooks import api as webhook_api


class IdConverter:
    """Row ids: digits only, and few enough to fit a 64-bit column, so an absurd id
    is a 404 rather than a database error."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")

v1: list[URLPattern | URLResolver] = [
    path("tasks/", task_api.TaskListView.as_view(), name="api-task-list"),
    path("tasks/<slug:slug>/", task_api.TaskDetailView.as_view(), name="api-task-detail"),
    path("submissions/", submission_api.SubmissionListView.as_view(), name="api-submission-list"),
    path(
        "submissions/batch/",
        submission_api.SubmissionBatchView.as_view(),
        name="api-submission-batch",
    ),
    path(
        "submissions/summary/",
        submission_api.SubmissionSummaryView.as_view(),
        name="api-submission-summary",
    ),
    path(
        "submissions/<id:pk>/",
        submission_api.SubmissionDetailView.as_view(),
        name="api-submission-detail",
    ),
    path(
        "submissions/<id:pk>/cancel/",
        submission_api.SubmissionCancelView.as_view(),
        name="api-submission-cancel",
    ),
    path(
        "submissions/<id:pk>/regrade/",
        submission_api.SubmissionRegradeView.as_view(),
        name="api-submission-regrade",
    ),
    path("tokens/", account_api.TokenListView.as_view(), name="api-token-list"),
    path("tokens/<id:pk>/", account_api.TokenDetailView.as_view(), name="api-token-detail"),
    path("me/", account_api.MeView.as_view(), name="api-me"),
    path("webhooks/", webhook_api.EndpointListView.as_view(), name="api-webhook-list"),
    path("webhooks/<id:pk>/", webhook_api.EndpointDetailView.as_view(), name="api-webhook-detail"),
    path(
        "webhooks/<id:pk>/deliveries/",
        webhook_api.DeliveryListView.as_view(),
        name="api-webhook-deliveries",
    ),
    path("reviews/", include("reviews.api_urls")),
    path("exports/", include("exports.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]

urlpatterns = [
    path("v1/", include(v1)),
    # Anything else under /api/ is a JSON 404, never the HTML page.
    re_path(r"^.*$", api_not_found),
]
