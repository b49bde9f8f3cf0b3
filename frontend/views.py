"""Pages of the browser UI. Every read goes through the ``*_for_user`` selectors."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import prefetch_related_objects
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET

from rubrics.models import Rubric
from tasks.models import Task, TaskStatus, TaskVersion
from tasks.selectors import files_for_user, tasks_for_user

from .forms import TaskFilterForm, tags_of

TASKS_PER_PAGE = 50


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request swaps a fragment in; a history restore needs the whole page."""
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


@login_required
@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    visible = tasks_for_user(request.user)
    form = TaskFilterForm(request.GET, tags=tags_of(visible))
    page = Paginator(form.filter(visible), TASKS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "section": "tasks"}
    fragment = wants_fragment(request)
    template = "frontend/tasks/_table.html" if fragment else "frontend/tasks/list.html"
    response = render(request, template, context)
    # The same URL answers with a fragment or a page: caches must keep them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response


@login_required
@require_GET
def task_detail(request: HttpRequest, slug: str) -> HttpResponse:
    # A task the user may not see is a 404, never a 403: its existence is not revealed.
    task = get_object_or_404(tasks_for_user(request.user), slug=slug)
    # Solvers get the published version; until a task is published again, its
    # authors and reviewers work on the draft.
    version = task.current_version if task.status == TaskStatus.PUBLISHED else None
    rubric = _rubric_of(version or task)
    if rubric is not None:
        prefetch_related_objects([rubric], "criteria")
    context = {
        "task": task,
        "shown": version or task,
        "version": version,
        "files": files_for_user(request.user, task, version),
        "rubric": rubric,
        "versions": task.versions.all(),
        "section": "tasks",
    }
    return render(request, "frontend/tasks/detail.html", context)


def _rubric_of(source: Task | TaskVersion) -> Rubric | None:
    try:
        return source.rubric
    except Rubric.DoesNotExist:
        return None
