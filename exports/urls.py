"""Export pages, included at /exports/ by benchwright.urls."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.definition_list, name="export-list"),
    path("new/", views.definition_create, name="export-create"),
    path("snapshots/<int:pk>/", views.snapshot_detail, name="export-snapshot"),
    path("snapshots/<int:pk>/download/", views.snapshot_download, name="export-download"),
    path("<slug:slug>/", views.definition_detail, name="export-detail"),
    path("<slug:slug>/edit/", views.definition_edit, name="export-edit"),
    path("<slug:slug>/snapshots/", views.snapshot_start, name="export-start"),
]
