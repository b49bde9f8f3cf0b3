"""Task review: reviewers read the draft, its validation and what changed since the
last review, comment on lines, then approve (publish a version) or request changes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from tasks import services as task_services
from tasks.models import ReviewDecision, Task, TaskFile, TaskReviewComment

from . import selectors
from .access import acting_user, reviewer_view
from .authoring_forms import ReviewCommentForm, ReviewDecisionForm
from .authoring_views import run_context
from .diffs import diff_files


@dataclass
class ReviewLine:
    number: int
    text: str
    comments: list[TaskReviewComment] = field(default_factory=list)


@dataclass
class ReviewFile:
    index: int
    file: TaskFile
    lines: list[ReviewLine]


def review_file(index: int, file: TaskFile, comments: list[TaskReviewComment]) -> ReviewFile:
    by_line: dict[int, list[TaskReviewComment]] = defaultdict(list)
    for comment in comments:
        by_line[comment.line].append(comment)
    texts = file.content.splitlines() or [""]
    lines = [ReviewLine(n, text, by_line.get(n, [])) for n, text in enumerate(texts, start=1)]
    return ReviewFile(index=index, file=file, lines=lines)


def _pending(task: Task) -> list[TaskReviewComment]:
    return list(
        TaskReviewComment.objects.filter(task=task, review=None)
        .select_related("author")
        .order_by("path", "line", "created_at")
    )


def _file_blocks(task: Task) -> list[ReviewFile]:
    comments: dict[str, list[TaskReviewComment]] = defaultdict(list)
    for comment in _pending(task):
        comments[comment.path].append(comment)
    files = task.files.order_by("path")
    return [review_file(i, f, comments.get(f.path, [])) for i, f in enumerate(files)]


def _changes_since_last_review(task: Task) -> tuple[Any, list[Any]]:
    last = selectors.latest_review(task)
    if last is None:
        return None, []
    old = {**last.files, "task.toml": last.manifest}
    new = {**selectors.draft_files(task), "task.toml": task_services.draft_manifest_text(task)}
    return last, diff_files(old, new)


@reviewer_view
@require_GET
def task_review(request: HttpRequest, task: Task) -> HttpResponse:
    last, changes = _changes_since_last_review(task)
    context = {
        "task": task,
        "section": "tasks",
        "blocks": _file_blocks(task),
        "last_review": last,
        "changes": changes,
        **run_context(task, selectors.latest_validation(task)),
        "reviews": task.reviews.select_related("reviewer").prefetch_related("comments")[:10],
        "decision_form": ReviewDecisionForm(),
        "in_review": task.status == "in_review",
    }
    return render(request, "frontend/review/review.html", context)


@reviewer_view
@require_GET
def review_comment_form(request: HttpRequest, task: Task) -> HttpResponse:
    """The inline form under a line (htmx)."""
    form = ReviewCommentForm(
        initial={"path": request.GET.get("path", ""), "line": request.GET.get("line", "")}
    )
    context = {"task": task, "form": form, "index": request.GET.get("index", "0")}
    return render(request, "frontend/review/_comment_form.html", context)


def _block_response(request: HttpRequest, task: Task, path: str) -> HttpResponse:
    files = list(task.files.order_by("path"))
    index = next((i for i, f in enumerate(files) if f.path == path), None)
    if index is None or request.headers.get("HX-Request") != "true":
        return redirect("task-review", task.slug)
    pending = [c for c in _pending(task) if c.path == path]
    context = {"task": task, "block": review_file(index, files[index], pending), "in_review": True}
    return render(request, "frontend/review/_file.html", context)


@reviewer_view
@require_POST
def review_comment_add(request: HttpRequest, task: Task) -> HttpResponse:
    form = ReviewCommentForm(request.POST)
    if form.is_valid():
        try:
            task_services.task_review_comment_add(
                task=task,
                reviewer=acting_user(request),
                **form.cleaned_data,
            )
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
    else:
        messages.error(request, "Write a comment on an existing line.")
    return _block_response(request, task, str(request.POST.get("path", "")))


@reviewer_view
@require_POST
def review_comment_delete(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    comment = get_object_or_404(TaskReviewComment, pk=pk, task=task)
    task_services.task_review_comment_delete(comment=comment, user=acting_user(request))
    return _block_response(request, task, comment.path)


@reviewer_view
@require_POST
def review_decide(request: HttpRequest, task: Task) -> HttpResponse:
    form = ReviewDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose approve or request changes.")
        return redirect("task-review", task.slug)
    try:
        review = task_services.task_review_decide(
            task=task,
            reviewer=acting_user(request),
            **form.cleaned_data,
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("task-review", task.slug)
    if review.decision == ReviewDecision.APPROVED and review.version is not None:
        messages.success(request, f"Approved: published as version v{review.version.number}.")
    else:
        messages.success(request, "Changes requested: the task is back with its author.")
    return redirect("task-detail", task.slug)
