"""Export pages, included at /exports/ by benchwright.urls. Every lookup goes
through ``exports.selectors``: a definition or snapshot the user may not see is a
404; a user who may not export at all gets 403 on every page."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import selectors, services
from .api import snapshot_file_response
from .forms import DefinitionForm, NewDefinitionForm, initial_from
from .models import ExportDefinition, Snapshot, SnapshotStatus
from .spec import SpecError

SECTION = "exports"


def exporter_required(
    view: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not selectors.may_export(request.user):
            raise PermissionDenied("exports are for admins and exporters")
        return view(request, *args, **kwargs)

    return wrapper


def acting_user(request: HttpRequest) -> User:
    """The logged-in user a service acts for (every view here requires a login)."""
    if not isinstance(request.user, User):
        raise PermissionDenied("log in first")
    return request.user


def _definition(request: HttpRequest, slug: str) -> ExportDefinition:
    return get_object_or_404(selectors.definitions_for_user(request.user), slug=slug)


def _snapshot(request: HttpRequest, pk: int) -> Snapshot:
    return get_object_or_404(selectors.snapshots_for_user(request.user), pk=pk)


@exporter_required
@require_GET
def definition_list(request: HttpRequest) -> HttpResponse:
    definitions = selectors.definitions_for_user(request.user).order_by("slug")
    return render(
        request,
        "exports/list.html",
        {"definitions": definitions, "section": SECTION},
    )


@exporter_required
@require_http_methods(["GET", "POST"])
def definition_create(request: HttpRequest) -> HttpResponse:
    form = NewDefinitionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            definition = services.definition_create(
                owner=acting_user(request),
                slug=form.cleaned_data["slug"],
                data=form.spec.to_dict(),
            )
        except SpecError as exc:
            for key, errors in exc.errors.items():
                for error in errors:
                    form.add_error(key if key in form.fields else None, error)
        else:
            messages.success(request, f"Export {definition.slug} defined (version 1).")
            return redirect("export-detail", slug=definition.slug)
    return render(request, "exports/form.html", {"form": form, "section": SECTION})


@exporter_required
@require_GET
def definition_detail(request: HttpRequest, slug: str) -> HttpResponse:
    definition = _definition(request, slug)
    context = {
        "definition": definition,
        "version": definition.current_version,
        "versions": selectors.versions_of(definition),
        "snapshots": selectors.snapshots_of(request.user, definition)[:50],
        "can_edit": selectors.can_edit_definition(request.user, definition),
        "section": SECTION,
    }
    return render(request, "exports/detail.html", context)


@exporter_required
@require_http_methods(["GET", "POST"])
def definition_edit(request: HttpRequest, slug: str) -> HttpResponse:
    definition = _definition(request, slug)
    if not selectors.can_edit_definition(request.user, definition):
        raise PermissionDenied("only the owner or an admin edits a definition")
    assert definition.current_version is not None
    form = DefinitionForm(request.POST or None, initial=initial_from(definition.current_version))
    if request.method == "POST" and form.is_valid():
        version = services.definition_update(
            definition_id=definition.pk,
            user=acting_user(request),
            data=form.spec.to_dict(),
        )
        messages.success(request, f"{definition.slug} is now at version {version.number}.")
        return redirect("export-detail", slug=definition.slug)
    context = {"form": form, "definition": definition, "section": SECTION}
    return render(request, "exports/form.html", context)


@exporter_required
@require_POST
def snapshot_start(request: HttpRequest, slug: str) -> HttpResponse:
    definition = _definition(request, slug)
    snapshot = services.snapshot_create(definition=definition, user=acting_user(request))
    return redirect("export-snapshot", pk=snapshot.pk)


@exporter_required
@require_GET
def snapshot_detail(request: HttpRequest, pk: int) -> HttpResponse:
    snapshot = _snapshot(request, pk)
    template = (
        "exports/_progress.html"
        if request.headers.get("HX-Request") == "true"
        else "exports/snapshot.html"
    )
    context = {
        "snapshot": snapshot,
        "left_out": selectors.left_out_for_user(request.user, snapshot),
        "section": SECTION,
    }
    response = render(request, template, context)
    # The same URL answers with a fragment or a page: caches must keep them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response


@exporter_required
@require_GET
def snapshot_download(request: HttpRequest, pk: int) -> FileResponse:
    snapshot = _snapshot(request, pk)
    if snapshot.status != SnapshotStatus.SUCCEEDED:
        raise Http404("this snapshot has not been built")
    return snapshot_file_response(snapshot)
