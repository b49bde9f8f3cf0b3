"""What every page of the task editor shows, for the views that draw one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tasks.models import Task, TaskFile

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


MAX_TREE_DEPTH = 6  # deeper entries are drawn at this indent


@dataclass(frozen=True)
class TreeEntry:
    """One line of the file tree: a folder (``file`` is None) or a file."""

    depth: int
    name: str  # the folder's name with a trailing /, or the file's own name
    file: TaskFile | None = None

    @property
    def indent(self) -> int:
        return min(self.depth, MAX_TREE_DEPTH)


def file_tree(files: Iterable[TaskFile]) -> list[TreeEntry]:
    """The draft's files as a tree, read top to bottom: each folder once, before the
    files and folders in it (a codebase under ``repo/`` reads as one)."""
    entries: list[TreeEntry] = []
    open_folders: list[str] = []
    for file in sorted(files, key=lambda f: f.path.split("/")):
        *folders, name = file.path.split("/")
        shared = 0
        while (
            shared < min(len(folders), len(open_folders))
            and folders[shared] == open_folders[shared]
        ):
            shared += 1
        entries += [TreeEntry(depth, f"{folders[depth]}/") for depth in range(shared, len(folders))]
        entries.append(TreeEntry(len(folders), name, file))
        open_folders = folders
    return entries
