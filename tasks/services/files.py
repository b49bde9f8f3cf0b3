"""Authoring in the browser: a draft's files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from graders.filetext import GZIP_MAGIC, file_bytes, is_binary, stored_text

from ..bundle import (
    MAX_FILE_BYTES,
    MAX_FILES,
    BundleError,
)
from ..models import (
    FileRole,
    Task,
    TaskFile,
    Visibility,
)
from .drafts import (
    _PROBE,
    STATEMENT_PATH,
    _probe_bundle,
    _probe_manifest,
    _raise_field_errors,
    _require_editor,
    _touch,
)
from .lifecycle import _require


@dataclass(frozen=True)
class _Entry:
    """A draft file as the bundle checker sees it."""

    path: str
    content: str
    visibility: str
    role: str
    expected_verdict: str = ""
    note: str = ""

    @classmethod
    def of(cls, f: TaskFile) -> _Entry:
        return cls(f.path, f.content, f.visibility, f.role, f.expected_verdict, f.note)

    def manifest_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": self.path, "visibility": self.visibility}
        entry["role"] = self.role
        if self.expected_verdict:
            entry["expected_verdict"] = self.expected_verdict
        if self.note:
            entry["note"] = self.note
        return entry


def _files_probe(others: list[_Entry], last: _Entry | None) -> list[BundleError]:
    """Problems of a bundle holding ``others`` and then ``last`` (kept last, so the
    others keep their indexes whether ``last`` is there or not)."""
    entries = [*others, *([last] if last else [])]
    statement = next((e.path for e in entries if e.role == FileRole.STATEMENT), STATEMENT_PATH)
    manifest = _probe_manifest(statement=statement, files=[e.manifest_entry() for e in entries])
    return _probe_bundle(manifest, {e.path: file_bytes(e.path, e.content) for e in entries})


def _check_file_change(
    task: Task, before: _Entry | None, after: _Entry, *, exclude: int | None
) -> None:
    """Refuse ``after`` (replacing ``before``, or new) if it adds a bundle problem."""
    try:
        file_bytes(after.path, after.content)
    except ValueError:
        raise ValidationError(
            {"content": ["a .gz file is kept as base64 of gzip data: upload the file instead"]}
        ) from None
    files = task.files.all() if exclude is None else task.files.exclude(pk=exclude)
    others = [_Entry.of(f) for f in files.order_by("path")]
    known = {str(e) for e in _files_probe(others, before)} if before or others else set()
    index = len(others)
    errors: list[tuple[str | None, str]] = []
    for error in _files_probe(others, after):
        if str(error) in known:
            continue  # an older problem of the draft, not this change's
        if error.field.startswith(f"files[{index}]."):
            errors.append((error.field.split(".", 1)[1], error.message))
        elif error.path == f"{_PROBE}/{after.path}":
            errors.append(("content", error.message))
        else:
            errors.append((None, error.message))
    _raise_field_errors(errors)


@transaction.atomic
def task_file_save(
    *,
    task: Task,
    user: User,
    content: str,
    visibility: str,
    role: str,
    expected_verdict: str = "",
    note: str = "",
    path: str = "",
    file: TaskFile | None = None,
) -> TaskFile:
    """Create a draft file at ``path``, or change ``file`` (its path stays: see rename).

    The statement file keeps its role and visibility; its text mirrors into the task.
    """
    _require_editor(user, task)
    if file is not None:
        _require(file.task_id == task.pk, "the file belongs to another task")
        path = file.path
        if file.role == FileRole.STATEMENT and (role, visibility) != (
            FileRole.STATEMENT,
            Visibility.PROMPT,
        ):
            raise ValidationError({"role": ["the statement stays the statement, shown to solvers"]})
    elif task.files.count() >= MAX_FILES:
        raise ValidationError({"path": [f"a task holds at most {MAX_FILES} files"]})
    after = _Entry(path, content, visibility, role, expected_verdict, note)
    before = _Entry.of(file) if file is not None else None
    _check_file_change(task, before, after, exclude=file.pk if file else None)
    if file is None:
        file = TaskFile(task=task, path=path)
    file.content, file.visibility, file.role = content, visibility, role
    file.expected_verdict, file.note = expected_verdict, note
    file.save()
    if role == FileRole.STATEMENT:
        task.statement = content
        task.save(update_fields=["statement", "updated_at"])
    else:
        _touch(task)
    return file


@transaction.atomic
def task_file_rename(*, file: TaskFile, user: User, new_path: str) -> TaskFile:
    task = file.task
    _require(task is not None, "files of a frozen version cannot be renamed")
    assert task is not None
    _require_editor(user, task)
    if new_path == file.path:
        return file
    before = _Entry.of(file)
    after = _Entry(
        new_path, file.content, file.visibility, file.role, file.expected_verdict, file.note
    )
    try:
        _check_file_change(task, before, after, exclude=file.pk)
    except ValidationError as exc:
        # The rename form has one field: every problem is about the new path.
        raise ValidationError({"path": exc.messages}) from None
    file.path = new_path
    file.save(update_fields=["path", "sha256", "updated_at"])
    _touch(task)
    return file


@transaction.atomic
def task_file_delete(*, file: TaskFile, user: User) -> None:
    task = file.task
    _require(task is not None, "files of a frozen version cannot be deleted")
    assert task is not None
    _require_editor(user, task)
    if file.role == FileRole.STATEMENT:
        raise ValidationError("the statement cannot be deleted; every task has one")
    file.delete()
    _touch(task)


def task_file_from_upload(data: bytes, *, name: str = "upload") -> str:
    """An uploaded file's text: bundle files are UTF-8 text of at most 1 MiB, or gzip
    data (a name ending in .gz), kept as base64 (``graders.filetext``)."""
    if len(data) > MAX_FILE_BYTES:
        raise ValidationError({"upload": [f"{name} is larger than {MAX_FILE_BYTES} bytes"]})
    if is_binary(name):
        if not data.startswith(GZIP_MAGIC):
            raise ValidationError({"upload": [f"{name} is not gzip data"]})
        return stored_text(name, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError({"upload": [f"{name} is not UTF-8 text"]}) from None
    if "\x00" in text:
        raise ValidationError({"upload": [f"{name} contains a NUL byte; bundle files are text"]})
    return text
