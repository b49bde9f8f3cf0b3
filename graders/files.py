"""Grading from files on disk, for any kind: what ``manage.py grade`` runs.

``grade_paths`` takes a task (a bundle folder, or a bare problem file of a kind
that takes them, such as a KernelBench or GPU MODE problem) and a submission (a
file, or a folder of files), builds the grading message a worker would get and
grades it through the registry. It always returns a report: a task that cannot
be read is the platform's problem (``internal_error``), a submission that
cannot be read is the submission's (``runtime_error``). ``render`` turns a
report into the text, or the single JSON object, the command prints.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import registry
from .verdicts import Verdict
from .worker import grade_message, internal_report

MAX_FILE_BYTES = 1024 * 1024


class TaskUnreadable(ValueError):
    """The task given on the command line cannot be used."""


def read_bundle(folder: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """A bundle folder's ``task.toml`` and every file it lists (path -> text). Only what
    grading needs is checked here; ``manage.py validate_tasks`` checks the rest."""
    try:
        manifest = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskUnreadable(f"task.toml: not found in {folder}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TaskUnreadable(f"task.toml: cannot be read: {exc}") from None
    entries = manifest.get("files", [])
    if not isinstance(entries, list):
        raise TaskUnreadable("task.toml: files: must be a list of tables")
    files: dict[str, str] = {}
    root = folder.resolve()
    for index, entry in enumerate(entries):
        path = entry.get("path") if isinstance(entry, Mapping) else None
        if not isinstance(path, str) or not path:
            raise TaskUnreadable(f"task.toml: files[{index}].path: missing")
        target = (folder / path).resolve()
        if not target.is_relative_to(root):
            raise TaskUnreadable(f"task.toml: files[{index}].path: {path!r} is outside the bundle")
        try:
            files[path] = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskUnreadable(f"{path}: cannot be read: {exc}") from None
    return manifest, files


def read_task(path: str | Path, *, kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A bundle folder, or a bare problem file taken as a task of ``kind``."""
    target = Path(path)
    if target.is_dir():
        return read_bundle(target)
    if not target.exists():
        raise TaskUnreadable(f"{target} does not exist")
    try:
        return registry.get(kind).problem_file_task(target)
    except registry.UnknownKind as exc:
        raise TaskUnreadable(str(exc)) from None
    except ValueError as exc:
        raise TaskUnreadable(str(exc)) from None


def read_submission(path: str | Path) -> dict[str, str]:
    """A file as itself, or every file under a folder by relative path (hidden files
    and ``__pycache__`` left out)."""
    target = Path(path)
    if target.is_file():
        return {target.name: target.read_text(encoding="utf-8")}
    if not target.is_dir():
        raise FileNotFoundError(f"{target} does not exist")
    files = {}
    for item in sorted(target.rglob("*")):
        relative = item.relative_to(target)
        if item.is_file() and not any(
            part.startswith(".") or part == "__pycache__" for part in relative.parts
        ):
            if item.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"{relative} is larger than {MAX_FILE_BYTES} bytes")
            files[relative.as_posix()] = item.read_text(encoding="utf-8")
    return files


def grade_paths(
    task: str | Path,
    submission: str | Path,
    *,
    kind: str = "kernel",
    backend_name: str = "bwrap",
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Grade a submission on disk against a task on disk; always a report dict.
    ``kind`` is used for a bare problem file (a bundle names its own);
    ``overrides`` are settings for this run the kind may honour (``trials``,
    ``hardware``)."""
    try:
        manifest, task_files = read_task(task, kind=kind)
    except TaskUnreadable as exc:
        return internal_report(f"the task cannot be used: {exc}")
    try:
        submission_files = read_submission(submission)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        report = internal_report(f"the submission cannot be read: {exc}")
        report["verdict"] = Verdict.RUNTIME_ERROR.value
        return report
    message = {
        "manifest": manifest,
        "task_files": task_files,
        "submission_files": submission_files,
        "overrides": dict(overrides or {}),
    }
    return grade_message(message, backend_name=backend_name)


def render(report: Mapping[str, Any], *, kind: str, as_json: bool) -> str:
    """The report as the command prints it: one JSON object, or lines for people."""
    if as_json:
        return json.dumps(report, indent=2)
    lines = [f"verdict:     {report.get('verdict')}", f"reason:      {report.get('reason')}"]
    if registry.is_kind(kind):
        lines.extend(registry.get(kind).summary_lines(report))
    integrity = report.get("integrity") or {}
    violations = integrity.get("violations") or []
    found = "clean" if not violations else "; ".join(map(str, violations))
    lines.append(f"integrity:   {len(integrity.get('checks') or [])} checks, {found}")
    duration = report.get("duration_s")
    if isinstance(duration, int | float):
        lines.append(f"duration:    {duration:.1f} s")
    logs = report.get("logs") or {}
    for stream in ("stdout", "stderr"):
        if logs.get(stream):
            lines.append(f"--- submission {stream} (tail) ---\n{str(logs[stream]).rstrip()}")
    return "\n".join(lines)


def task_kind(path: str | Path, *, default: str) -> str:
    """The kind a task on disk declares (a bundle's ``kind``), else ``default``."""
    target = Path(path)
    if target.is_dir():
        try:
            kind = tomllib.loads((target / "task.toml").read_text(encoding="utf-8")).get("kind")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return default
        return kind if isinstance(kind, str) else default
    return default


def exit_code(report: Mapping[str, Any]) -> int:
    return 0 if report.get("verdict") == Verdict.ACCEPTED.value else 1
