"""Tasks as files (docs/bundles.md): importing bundles and writing them out."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from benchwright import roles
from graders.filetext import file_bytes
from rubrics.models import Rubric

from ..bundle import (
    MANIFEST,
    Bundle,
    BundleError,
    BundleInvalid,
    parse_bundle,
    path_problem,
)
from ..models import (
    Task,
    TaskFile,
    TaskStatus,
    TaskVersion,
)
from .lifecycle import (
    PermissionDenied,
    _rubric_create,
    task_publish,
    task_revise,
    task_submit_for_review,
    version_freeze,
)
from .manifests import content_hash, draft_manifest_text, task_draft_hash, version_manifest_text


@dataclass(frozen=True)
class ImportResult:
    """What importing one bundle did."""

    task: Task
    version: TaskVersion
    task_created: bool
    draft_changed: bool  # the draft's files, rubric or fields were rewritten
    version_created: bool
    made_current: bool  # the version became the published one by this import

    @property
    def summary(self) -> str:
        number = self.version.number
        if self.task_created:
            text = f"created task, version {number}"
        elif self.version_created:
            text = f"new version {number}"
        elif self.made_current:
            text = f"published existing version {number}"
        else:
            text = f"unchanged (version {number})"
        if self.task.status != TaskStatus.PUBLISHED:
            text += f", {self.task.status}"
        elif (current := self.task.current_version) != self.version and current is not None:
            text += f", not published (version {current.number} is)"
        return text


def bundle_import_problems(*, bundle: Bundle, user: User, publish: bool = True) -> list[str]:
    """Why ``user`` may not import ``bundle`` (empty when it may)."""
    return _import_problems(Task.objects.filter(slug=bundle.slug).first(), user, publish)


def _import_problems(task: Task | None, user: User, publish: bool) -> list[str]:
    problems: list[str] = []
    admin = roles.is_admin(user)
    if task is not None and task.owner_id != user.pk and not admin:
        problems.append(
            f"task {task.slug} belongs to {task.owner}; only its owner or an admin may overwrite it"
        )
    if publish and not roles.has_role(user, roles.REVIEWER):
        problems.append(f"{user} cannot publish (not a reviewer); import it as a draft")
    elif publish and not admin and (task is None or task.owner_id == user.pk):
        problems.append(
            "authors cannot approve their own tasks; import it as a draft or as an admin"
        )
    return problems


@transaction.atomic
def bundle_import(*, bundle: Bundle, user: User, publish: bool = True) -> ImportResult:
    """Make ``bundle`` the task's draft, freeze it, and publish that version.

    The same content gives the same version (no new rows); changed content a new
    one. The task moves only through allowed transitions, ``user`` acting as the
    reviewer. A retired task is not brought back. Everything happens in one
    transaction: on any error nothing stays.
    """
    task = Task.objects.select_for_update().filter(slug=bundle.slug).first()
    problems = _import_problems(task, user, publish)
    if problems:
        raise PermissionDenied("; ".join(problems))
    created = task is None
    if task is None:
        task = Task.objects.create(slug=bundle.slug, owner=user, **_bundle_fields(bundle))
    draft_changed = _draft_replace(task=task, bundle=bundle) or created
    version, version_created = version_freeze(
        task=task, user=user, manifest_text=bundle.manifest_text
    )
    made_current = publish and _publish_version(task=task, version=version, user=user)
    return ImportResult(
        task=Task.objects.select_related("current_version").get(pk=task.pk),
        version=version,
        task_created=created,
        draft_changed=draft_changed,
        version_created=version_created,
        made_current=made_current,
    )


def _bundle_fields(bundle: Bundle) -> dict[str, Any]:
    return {
        "title": bundle.title,
        "kind": bundle.kind,
        "difficulty": bundle.difficulty,
        "tags": list(bundle.tags),
        "hardware": bundle.hardware,
        "grading": bundle.grading,
        "statement": bundle.statement_text,
    }


def _draft_replace(*, task: Task, bundle: Bundle) -> bool:
    """Make the draft hold exactly the bundle's content; False if it already did."""
    fields = _bundle_fields(bundle)
    changed = [name for name, value in fields.items() if getattr(task, name) != value]
    for name in changed:
        setattr(task, name, fields[name])
    if changed:
        task.save(update_fields=[*changed, "updated_at"])
    if task_draft_hash(task) == content_hash(bundle.hash_manifest(), bundle.file_data()):
        return bool(changed)
    task.files.all().delete()
    Rubric.objects.filter(task=task).delete()
    TaskFile.objects.bulk_create(
        TaskFile(
            task=task,
            path=f.path,
            content=f.text,
            visibility=f.visibility,
            role=f.role,
            expected_verdict=f.expected_verdict,
            note=f.note,
            sha256=hashlib.sha256(f.data).hexdigest(),  # bulk_create skips save()
        )
        for f in bundle.files
    )
    if bundle.criteria is not None:
        _rubric_create(Rubric(task=task), enumerate(bundle.criteria))
    return True


def _publish_version(*, task: Task, version: TaskVersion, user: User) -> bool:
    """Move the task to published with ``version`` current: published -> draft ->
    in_review -> published as needed. False if it already was, or the task is retired."""
    status, current_id = Task.objects.values_list("status", "current_version_id").get(pk=task.pk)
    if status == TaskStatus.RETIRED or (
        status == TaskStatus.PUBLISHED and current_id == version.pk
    ):
        return False
    if status == TaskStatus.PUBLISHED:
        task_revise(task=task, user=user)
        status = TaskStatus.DRAFT
    if status == TaskStatus.DRAFT:
        task_submit_for_review(task=task, user=user, require_validation=False)
    task_publish(task=task, reviewer=user)  # freezes the same draft: finds ``version``
    return True


class ExportError(Exception):
    """The bundle cannot be written where asked, or holds a path unsafe to write."""


@dataclass(frozen=True)
class ExportResult:
    dest: Path
    paths: list[str]  # task.toml first, then the files
    problems: list[BundleError]  # why the written bundle would not import as is


def bundle_render(
    *, task: Task | None = None, version: TaskVersion | None = None
) -> dict[str, bytes]:
    """A task's draft (or a version) as bundle files, path -> bytes, task.toml first.

    task.toml is the raw text it was imported with when there is one (for a draft:
    a version with the draft's content hash that has it); otherwise it is generated
    from the content, and parses back to the same content hash.
    """
    if version is not None:
        files = list(version.files.all())
        text = version_manifest_text(version)
    elif task is not None:
        files = list(task.files.all())
        text = draft_manifest_text(task)
    else:
        raise TypeError("bundle_render needs a task or a version")
    rendered = {MANIFEST: text.encode()}
    for f in sorted(files, key=lambda f: f.path):
        if why := path_problem(f.path):
            raise ExportError(f"refusing to write {f.path!r}: the path {why}")
        rendered[f.path] = file_bytes(f.path, f.content)
    return rendered


def bundle_export(
    *,
    dest: str | os.PathLike[str],
    task: Task | None = None,
    version: TaskVersion | None = None,
    replace: bool = False,
) -> ExportResult:
    """Write a task's draft (or a version) as a bundle folder at ``dest``.

    ``dest`` must be missing or empty, or, with ``replace``, an existing bundle
    (it holds a task.toml) whose files are all removed first. No access checks:
    the bundle includes hidden files, so callers decide who may export.
    """
    rendered = bundle_render(task=task, version=version)
    root = Path(dest)
    _prepare_export_dir(root, replace=replace)
    resolved = root.resolve()
    for path, data in rendered.items():
        target = root / path
        if not target.resolve().is_relative_to(resolved):
            raise ExportError(f"refusing to write {path!r} outside {root}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as handle:
            handle.write(data)
    try:
        parse_bundle(rendered, name=root.name)
        problems: list[BundleError] = []
    except BundleInvalid as exc:
        problems = exc.errors
    return ExportResult(dest=root, paths=list(rendered), problems=problems)


def _prepare_export_dir(root: Path, *, replace: bool) -> None:
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise ExportError(f"{root} exists and is not a folder")
    if not root.exists() or not any(root.iterdir()):
        root.mkdir(parents=True, exist_ok=True)
        return
    if not replace:
        raise ExportError(f"{root} is not empty; replace (--replace) overwrites a bundle there")
    if not (root / MANIFEST).is_file():
        raise ExportError(f"{root} holds no {MANIFEST}: not replacing a folder that is no bundle")
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            entry = os.path.join(dirpath, name)
            if os.path.islink(entry):
                os.unlink(entry)
            else:
                os.rmdir(entry)
