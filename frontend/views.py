"""Pages of the browser UI. Every read goes through the ``*_for_user`` selectors."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import prefetch_related_objects
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from benchwright import roles
from reviews.rendering import timing_chart
from rubrics.models import Rubric
from tasks import services as task_services
from tasks.models import Task, TaskStatus, TaskVersion
from tasks.selectors import can_edit_task, can_see_hidden_files, files_for_user, tasks_for_user
from tasks.timelines import trace_paths

from . import selectors, submission_pages
from .access import acting_user
from .diffs import diff_files
from .editor import editor_context
from .forms import DiffForm, TaskFilterForm, filter_choices
from .htmx import page_or_fragment, wants_fragment
from .templatetags.frontend import role_names

TASKS_PER_PAGE = 50


@login_required
@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    visible = tasks_for_user(request.user)
    tags, owners = filter_choices(visible)
    form = TaskFilterForm(request.GET, tags=tags, owners=owners)
    page = Paginator(form.filter(visible), TASKS_PER_PAGE).get_page(request.GET.get("page"))
    user_roles = role_names(request.user)
    context = {
        "form": form,
        "page": page,
        "section": "tasks",
        "user_roles": user_roles,  # the frame shows them too: read once
        "can_author": bool({roles.AUTHOR, roles.ADMIN} & set(user_roles)),
    }
    return page_or_fragment(
        request, "frontend/tasks/list.html", "frontend/tasks/_table.html", context
    )


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
    insider = can_see_hidden_files(request.user, task)
    context = {
        "task": task,
        "shown": version or task,
        "version": version,
        "files": files_for_user(request.user, task, version),
        "traces": trace_paths(version or task),
        "rubric": rubric,
        "versions": task.versions.all(),
        "section": "tasks",
        "insider": insider,
        "can_edit": can_edit_task(request.user, task),
        "can_review": task.status == TaskStatus.IN_REVIEW
        and task_services.reviewer_may_decide(acting_user(request), task),
        "can_revise": task.status in (TaskStatus.PUBLISHED, TaskStatus.RETIRED)
        and (task.owner_id == request.user.pk or roles.is_admin(request.user)),
        # Review comments quote hidden files: only for those who may see them.
        "feedback": selectors.feedback_for_author(task) if insider else None,
    }
    return render(request, "frontend/tasks/detail.html", context)


@login_required
@require_GET
def task_history(request: HttpRequest, slug: str) -> HttpResponse:
    """Versions and a per-file diff between any two of them (or the draft)."""
    task = get_object_or_404(tasks_for_user(request.user), slug=slug)
    choices = selectors.diff_source_choices(task, request.user)
    # With nothing chosen yet, show the latest change: the newest two sources.
    default = DiffForm.default_data(choices)
    form = DiffForm(request.GET or default, choices=choices)
    diffs = None
    labels: tuple[str, str] | None = None
    if form.is_valid():
        old = selectors.source_files(task, request.user, form.cleaned_data["old"])
        new = selectors.source_files(task, request.user, form.cleaned_data["new"])
        if old is not None and new is not None:
            labels = (old[0], new[0])
            diffs = diff_files(old[1], new[1])
    insider = can_see_hidden_files(request.user, task)
    hidden_changed = (
        labels is not None
        and not insider
        and selectors.hidden_changes(task, form.cleaned_data["old"], form.cleaned_data["new"])
    )
    context = {
        "task": task,
        "section": "tasks",
        "tab": "history",
        "editable": can_edit_task(request.user, task),
        "versions": task.versions.select_related("created_by").order_by("-number"),
        "form": form,
        "diffs": diffs,
        "labels": labels,
        "mode": form.cleaned_data.get("mode", "unified") if diffs is not None else "unified",
        "insider": insider,
        "hidden_changed": hidden_changed,
    }
    if wants_fragment(request) and request.headers.get("HX-Target") == "diff":
        return render(request, "frontend/history/_diff.html", context)
    if context["editable"]:
        context = {**editor_context(task, "history"), **context}
    return render(request, "frontend/history/history.html", context)


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """Catalog health (tasks by kind and status, failing validations, the review queue)
    for those who build the catalog; a client's dashboard is their submissions."""
    if not {roles.AUTHOR, roles.REVIEWER, roles.ADMIN} & set(role_names(request.user)):
        return redirect("submission-list")
    stats = selectors.dashboard(tasks_for_user(request.user))
    return render(request, "frontend/dashboard.html", {"section": "dashboard", **stats})


def _rubric_of(source: Task | TaskVersion) -> Rubric | None:
    try:
        return source.rubric
    except Rubric.DoesNotExist:
        return None


SUBMISSIONS_PER_PAGE = 50


@login_required
@require_GET
def submission_list(request: HttpRequest) -> HttpResponse:
    """The submissions the user may see, newest first; while any is still being graded
    the table asks again every few seconds (htmx), so states update without a reload."""
    visible = submission_pages.visible_submissions(request.user)
    task = request.GET.get("task", "")
    verdict = request.GET.get("verdict", "")
    shown = visible
    if task:
        shown = shown.filter(task_version__task__slug=task)
    if verdict:
        shown = shown.filter(verdict=verdict)
    shown = submission_pages.with_timing(shown).order_by("-created_at", "-pk")
    page = Paginator(shown, SUBMISSIONS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [
        {
            "submission": s,
            "blind": submission_pages.is_blind(request.user, s),
            "timing": submission_pages.speedup_view(s),
        }
        for s in page
    ]
    context = {
        "section": "submissions",
        "page": page,
        "rows": rows,
        "task": task,
        "verdict": verdict,
        "query": request.GET.urlencode(),
        "grading": any(s.status in submission_pages.GRADING for s in page),
        "tasks": sorted(set(visible.values_list("task_version__task__slug", flat=True))),
        "verdicts": sorted(set(visible.exclude(verdict="").values_list("verdict", flat=True))),
    }
    return page_or_fragment(
        request, "frontend/submissions/list.html", "frontend/submissions/_table.html", context
    )


@login_required
@require_GET
def submission_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One submission: verdict, correctness per shape, timing, integrity, logs, and the
    review's decision and feedback once there is one. Not visible: a 404."""
    submission = get_object_or_404(submission_pages.visible_submissions(request.user), pk=pk)
    context = {"section": "submissions", **submission_pages.page_context(request.user, submission)}
    context["timing_chart"] = timing_chart(context["timing"])
    return page_or_fragment(
        request, "frontend/submissions/detail.html", "frontend/submissions/_detail.html", context
    )
