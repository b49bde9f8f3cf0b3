"""Links to a profiling task's trace timeline (the page is the frontend's
``task-timeline``): which traces a task lists, and the URL that draws one with
the events an answer cites highlighted."""

from __future__ import annotations

import json
from typing import Any

from django.urls import reverse
from django.utils.http import urlencode

from .models import Task, TaskVersion

MAX_CITED = 500


def trace_paths(source: Task | TaskVersion) -> list[str]:
    """The traces a profiling task (or version) lists, in rank order; [] for others."""
    grading = source.grading or {}
    traces = grading.get("traces") if source.kind == "profiling" else None
    return [p for p in traces if isinstance(p, str)] if isinstance(traces, list) else []


def timeline_url(
    task: Task, path: str, *, version: TaskVersion | None = None, cite: list[str] | None = None
) -> str:
    query: dict[str, str] = {"file": path}
    if version is not None:
        query["version"] = str(version.number)
    if cite:
        query["cite"] = ",".join(cite)
    return f"{reverse('task-timeline', args=[task.slug])}?{urlencode(query)}"


def answer_timelines(version: TaskVersion, fields: Any) -> list[tuple[str, str]]:
    """(trace path, timeline URL) per trace of a profiling task's version, with the
    events an answer's evidence fields cite highlighted; [] for other tasks.
    ``fields``: a report's fields (the answer as a list, or as JSON text)."""
    paths = trace_paths(version)
    if not paths:
        return []
    cited: list[str] = []
    for entry in fields if isinstance(fields, list) else []:
        if not isinstance(entry, dict) or entry.get("type") != "evidence":
            continue
        answer = entry.get("answer")
        if isinstance(answer, str):
            try:
                answer = json.loads(answer)
            except ValueError:
                answer = None
        if isinstance(answer, list):
            cited.extend(str(item) for item in answer if isinstance(item, str))
    cite = list(dict.fromkeys(cited))[:MAX_CITED]
    return [(p, timeline_url(version.task, p, version=version, cite=cite)) for p in paths]
