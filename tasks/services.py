"""Every write to tasks: creation, status changes, freezing versions."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w
from django.contrib.auth.models import User
from django.db import transaction

from benchwright import roles
from benchwright.state import transition
from rubrics.models import Criterion, Rubric

from .bundle import MANIFEST, Bundle, BundleError, BundleInvalid, parse_bundle, path_problem
from .models import (
    TASK_TRANSITIONS,
    FileRole,
    Task,
    TaskFile,
    TaskStatus,
    TaskVersion,
)


class PermissionDenied(Exception):
    """The user may not do this to this task."""


def content_hash(manifest: dict[str, Any], files: dict[str, bytes]) -> str:
    """SHA-256 over a canonical JSON of the manifest and each file's path and SHA-256."""
    canonical = {
        "manifest": manifest,
        "files": sorted((path, hashlib.sha256(data).hexdigest()) for path, data in files.items()),
    }
    encoded = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


def draft_manifest(task: Task) -> dict[str, Any]:
    """The draft as the dict a task.toml would parse to (the files' content aside)."""
    # Sorted here, not by the database: ORDER BY follows the database's collation, and
    # the hash must not depend on it.
    files = sorted(task.files.all(), key=lambda f: f.path)
    statement = next((f.path for f in files if f.role == FileRole.STATEMENT), None)
    manifest: dict[str, Any] = {
        "slug": task.slug,
        "title": task.title,
        "kind": task.kind,
        "difficulty": task.difficulty,
        "tags": list(task.tags),
        "hardware": task.hardware,
    }
    if statement:
        manifest["statement"] = statement
    if task.grading:
        manifest["grading"] = task.grading
    manifest["files"] = [_file_entry(f) for f in files]
    rubric = getattr(task, "rubric", None)
    if rubric is not None:
        manifest["rubric"] = {"criteria": [_criterion_entry(c) for c in rubric.criteria.all()]}
    return manifest


def _file_entry(f: TaskFile) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": f.path, "visibility": f.visibility, "role": f.role}
    if f.expected_verdict:
        entry["expected_verdict"] = f.expected_verdict
    if f.note:
        entry["note"] = f.note
    return entry


def _criterion_entry(c: Criterion) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": c.key, "title": c.title}
    if c.description:
        entry["description"] = c.description
    entry["points"] = c.points
    entry["kind"] = c.kind
    if c.rule:
        entry["rule"] = c.rule
    if c.levels:
        entry["levels"] = c.levels
    return entry


def task_draft_hash(task: Task) -> str:
    files = {f.path: f.content.encode() for f in task.files.all()}
    return content_hash(draft_manifest(task), files)


@transaction.atomic
def version_freeze(
    *, task: Task, user: User | None, manifest_text: str = ""
) -> tuple[TaskVersion, bool]:
    """Freeze the draft into a TaskVersion; the same content gives the same version.

    Returns ``(version, created)``.
    """
    task = Task.objects.select_for_update().get(pk=task.pk)
    digest = task_draft_hash(task)
    existing = task.versions.filter(content_hash=digest).first()
    if existing is not None:
        return existing, False
    last = task.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = TaskVersion.objects.create(
        task=task,
        number=last + 1,
        content_hash=digest,
        title=task.title,
        kind=task.kind,
        statement=task.statement,
        difficulty=task.difficulty,
        tags=list(task.tags),
        hardware=task.hardware,
        grading=task.grading,
        manifest=manifest_text,
        created_by=user,
    )
    TaskFile.objects.bulk_create(
        TaskFile(
            version=version,
            path=f.path,
            content=f.content,
            visibility=f.visibility,
            role=f.role,
            expected_verdict=f.expected_verdict,
            note=f.note,
            sha256=f.sha256,
        )
        for f in task.files.all()
    )
    draft_rubric = getattr(task, "rubric", None)
    if draft_rubric is not None:
        frozen = Rubric.objects.create(version=version)
        Criterion.objects.bulk_create(
            Criterion(
                rubric=frozen,
                key=c.key,
                title=c.title,
                description=c.description,
                points=c.points,
                kind=c.kind,
                rule=c.rule,
                levels=c.levels,
                position=c.position,
            )
            for c in draft_rubric.criteria.all()
        )
    return version, True


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PermissionDenied(message)


class NotValidated(Exception):
    """The draft has not passed validation in its current form."""


def task_submit_for_review(*, task: Task, user: User, require_validation: bool = True) -> None:
    """Send a draft to review. It must have passed validation as it is now; only a
    catalog import by an admin (validated by ``validate_tasks`` in CI) skips that."""
    _require(
        task.owner_id == user.pk or roles.is_admin(user),
        "only the task's author can send it to review",
    )
    if require_validation:
        from .validation import validation_passed_for_draft

        if not validation_passed_for_draft(task):
            raise NotValidated(f"{task.slug}: validate the draft before sending it to review")
    elif not roles.is_admin(user):
        raise PermissionDenied("only an admin may send an unvalidated draft to review")
    transition(Task.objects, task.pk, to=TaskStatus.IN_REVIEW, allowed=TASK_TRANSITIONS)


def task_request_changes(*, task: Task, reviewer: User) -> None:
    _require(roles.has_role(reviewer, roles.REVIEWER), "only reviewers can request changes")
    # Only a task under review: a published task goes back to draft by its author's revise.
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.DRAFT,
        allowed=TASK_TRANSITIONS,
        from_=TaskStatus.IN_REVIEW,
    )


@transaction.atomic
def task_publish(*, task: Task, reviewer: User) -> TaskVersion:
    """Approve a task in review: freeze its draft and make that version current."""
    _require(roles.has_role(reviewer, roles.REVIEWER), "only reviewers can publish")
    _require(
        task.owner_id != reviewer.pk or roles.is_admin(reviewer),
        "authors cannot approve their own tasks",
    )
    version, _ = version_freeze(task=task, user=reviewer)
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.PUBLISHED,
        allowed=TASK_TRANSITIONS,
        current_version=version,
    )
    return version


def task_revise(*, task: Task, user: User) -> None:
    """Reopen a published or retired task as a draft; its versions stay frozen."""
    _require(task.owner_id == user.pk or roles.is_admin(user), "only the author can revise")
    transition(
        Task.objects,
        task.pk,
        to=TaskStatus.DRAFT,
        allowed=TASK_TRANSITIONS,
        from_={TaskStatus.PUBLISHED, TaskStatus.RETIRED},
    )


def task_retire(*, task: Task, user: User) -> None:
    _require(task.owner_id == user.pk or roles.is_admin(user), "only the author can retire")
    transition(Task.objects, task.pk, to=TaskStatus.RETIRED, allowed=TASK_TRANSITIONS)


# --- task bundles: tasks as files (docs/bundles.md) --------------------------------------------


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
        rubric = Rubric.objects.create(task=task)
        Criterion.objects.bulk_create(
            Criterion(
                rubric=rubric,
                key=c.key,
                title=c.title,
                description=c.description,
                points=c.points,
                kind=c.kind,
                rule=c.rule,
                levels=c.levels,
                position=position,
            )
            for position, c in enumerate(bundle.criteria)
        )
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


def version_manifest(version: TaskVersion) -> dict[str, Any]:
    """A frozen version as the dict a task.toml would parse to (like ``draft_manifest``)."""
    files = sorted(version.files.all(), key=lambda f: f.path)
    statement = next((f.path for f in files if f.role == FileRole.STATEMENT), None)
    manifest: dict[str, Any] = {
        "slug": version.task.slug,
        "title": version.title,
        "kind": version.kind,
        "difficulty": version.difficulty,
        "tags": list(version.tags),
        "hardware": version.hardware,
    }
    if statement:
        manifest["statement"] = statement
    if version.grading:
        manifest["grading"] = version.grading
    manifest["files"] = [_file_entry(f) for f in files]
    rubric = Rubric.objects.filter(version=version).first()
    if rubric is not None:
        manifest["rubric"] = {"criteria": [_criterion_entry(c) for c in rubric.criteria.all()]}
    return manifest


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
        text = version.manifest or tomli_w.dumps(version_manifest(version))
    elif task is not None:
        files = list(task.files.all())
        text = _imported_manifest(task) or tomli_w.dumps(draft_manifest(task))
    else:
        raise TypeError("bundle_render needs a task or a version")
    rendered = {MANIFEST: text.encode()}
    for f in sorted(files, key=lambda f: f.path):
        if why := path_problem(f.path):
            raise ExportError(f"refusing to write {f.path!r}: the path {why}")
        rendered[f.path] = f.content.encode()
    return rendered


def _imported_manifest(task: Task) -> str:
    digest = task_draft_hash(task)
    same = task.versions.filter(content_hash=digest).exclude(manifest="").first()
    return same.manifest if same is not None else ""


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
