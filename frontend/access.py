"""How views find the task they act on. Every lookup goes through ``tasks.selectors``:
a task the user may not see, or may not act on in this way, is a 404, so its
existence is never revealed."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect

from tasks import services as task_services
from tasks.models import Task
from tasks.selectors import can_edit_task, can_see_hidden_files, tasks_for_user

P = ParamSpec("P")
TaskView = Callable[Concatenate[HttpRequest, Task, P], HttpResponse]


def acting_user(request: HttpRequest) -> User:
    """The logged-in user a service acts for (every view that writes requires a login)."""
    if not request.user.is_authenticated:
        raise PermissionDenied("log in first")
    return cast(User, request.user)


def visible_task(request: HttpRequest, slug: str) -> Task:
    return get_object_or_404(tasks_for_user(request.user), slug=slug)


def _service_errors_are_403(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(*args, **kwargs)
        except task_services.PermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc

    return wrapper


def editor_view(view: TaskView[P]) -> Callable[..., HttpResponse]:
    """The task's author (or an admin) on a draft. The author of a task in review or
    published is sent to its page; anyone else gets a 404."""

    @login_required
    @wraps(view)
    @_service_errors_are_403
    def wrapper(request: HttpRequest, slug: str, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        task = visible_task(request, slug)
        if not can_edit_task(request.user, task):
            if task.owner_id == request.user.pk:
                status = task.get_status_display().lower()
                messages.info(request, f"{task.title} is {status}: only a draft can be edited.")
                return redirect("task-detail", task.slug)
            raise Http404("not editable by this user")
        return view(request, task, *args, **kwargs)

    return wrapper


def insider_view(view: TaskView[P]) -> Callable[..., HttpResponse]:
    """Those who may see the task's hidden files: its author, reviewers, admins."""

    @login_required
    @wraps(view)
    @_service_errors_are_403
    def wrapper(request: HttpRequest, slug: str, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        task = visible_task(request, slug)
        if not can_see_hidden_files(request.user, task):
            raise Http404("hidden from this user")
        return view(request, task, *args, **kwargs)

    return wrapper


def reviewer_view(view: TaskView[P]) -> Callable[..., HttpResponse]:
    """A reviewer other than the author (admins may review their own)."""

    @login_required
    @wraps(view)
    @_service_errors_are_403
    def wrapper(request: HttpRequest, slug: str, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        task = visible_task(request, slug)
        if not task_services.reviewer_may_decide(acting_user(request), task):
            raise Http404("not a reviewer of this task")
        return view(request, task, *args, **kwargs)

    return wrapper
