"""Export API routes, included at /api/v1/exports/ by benchwright.api_urls.

Definition names match any path segment (``str``), not only slugs: a name that
cannot exist gets the API's JSON 404 from the view rather than falling through
to the HTML pages.
"""

from django.urls import path

from . import api

urlpatterns = [
    path("definitions/", api.DefinitionListView.as_view(), name="api-export-definition-list"),
    path(
        "definitions/<str:slug>/",
        api.DefinitionDetailView.as_view(),
        name="api-export-definition-detail",
    ),
    path(
        "definitions/<str:slug>/snapshots/",
        api.SnapshotListView.as_view(),
        name="api-export-snapshot-list",
    ),
    path("snapshots/<id:pk>/", api.SnapshotDetailView.as_view(), name="api-export-snapshot"),
    path(
        "snapshots/<id:pk>/download/",
        api.SnapshotDownloadView.as_view(),
        name="api-export-snapshot-download",
    ),
]
