"""What every page of the task editor shows, for the views that draw one."""

from __future__ import annotations

from typing import Any

from tasks.models import Task

from . import selectors

TABS = (
    ("overview", "Overview", "task-edit"),
    ("files", "Files", "task-files"),
    ("grading", "Grading", "task-grading"),
    ("rubric", "Rubric", "task-rubric"),
    ("validation", "Validation", "task-validation"),
    ("history", "History", "task-history"),
)


def editor_context(task: Task, tab: str, **extra: Any) -> dict[str, Any]:
    """What every editor page shows: the tabs, the actions and why review may not start."""
    task.refresh_from_db()
    return {
        "task": task,
        "tab": tab,
        "tabs": TABS,
        "section": "tasks",
        "readiness": selectors.review_readiness(task),
        "editable": True,
        "feedback": selectors.feedback_for_author(task),
        **extra,
    }
