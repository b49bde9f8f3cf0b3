"""The trace timeline page: a profiling task's trace drawn as lanes, for the task's
authors and reviewers (and anyone who may see the task: traces are shown to
solvers). ``?file=`` picks the trace, ``?version=`` the task version (default:
what the task page shows), ``?cite=`` evidence ids to highlight, as an answer
cites them (``corr:812``, ``rank1/ev:40``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from graders.filetext import file_bytes
from tasks.models import Task, TaskStatus, TaskVersion
from tasks.selectors import files_for_user, tasks_for_user
from tasks.timelines import MAX_CITED, timeline_url, trace_paths


def _version(request: HttpRequest, task: Task) -> TaskVersion | None:
    number = request.GET.get("version")
    if number is None:
        return task.current_version if task.status == TaskStatus.PUBLISHED else None
    if not number.isdigit():
        raise Http404
    return get_object_or_404(task.versions, number=int(number))


@login_required
@require_GET
def task_timeline(request: HttpRequest, slug: str) -> HttpResponse:
    from graders.profiling.timeline import cited_positions, timeline
    from graders.profiling.trace import TraceError, load_trace

    task = get_object_or_404(tasks_for_user(request.user), slug=slug)
    version = _version(request, task)
    source = version or task
    visible = {f.path: f for f in files_for_user(request.user, task, version)}
    paths = [p for p in trace_paths(source) if p in visible]
    if not paths:
        raise Http404("this task has no traces")
    path = request.GET.get("file") or paths[0]
    if path not in paths:
        raise Http404("no such trace")
    cite = [c for c in request.GET.get("cite", "").split(",") if c][:MAX_CITED]
    context: dict[str, Any] = {
        "task": task,
        "version": version,
        "path": path,
        "tabs": [(p, timeline_url(task, p, version=version, cite=cite), p == path) for p in paths],
        "cite": cite,
        "section": "tasks",
    }
    try:
        traces = [load_trace(file_bytes(p, visible[p].content), name=p) for p in paths]
    except (TraceError, ValueError) as error:
        context["error"] = str(error)
        return render(request, "frontend/tasks/timeline.html", context, status=422)
    rank = paths.index(path)
    data = timeline(traces[rank], cited=cited_positions(traces, rank, cite))
    context |= {"data": data, "cited_items": [i for i in data["items"] if i["cited"]][:50]}
    return render(request, "frontend/tasks/timeline.html", context)
