"""Every write to tasks: creation, status changes, freezing versions, authoring in
the browser (files, grading settings, rubric), bundle zips and task reviews."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import tomli_w
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from benchwright import roles
from benchwright.state import transition
from graders import registry
from graders.contract import GradingTableError
from rubrics.models import Criterion, Rubric

from .bundle import (
    IGNORED_DIRS,
    MANIFEST,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Bundle,
    BundleError,
    BundleInvalid,
    criterion_entry,
    file_entry,
    parse_bundle,
    path_problem,
)
from .manifest_text import edited as edited_manifest
from .models import (
    DEFAULT_KIND,
    TASK_TRANSITIONS,
    FileRole,
    ReviewDecision,
    Task,
    TaskFile,
    TaskReview,
    TaskReviewComment,
    TaskStatus,
    TaskVersion,
    ValidationRun,
    ValidationStatus,
    Visibility,
)
from .selectors import can_edit_task


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
    manifest["files"] = [file_entry(f) for f in files]
    rubric = getattr(task, "rubric", None)
    if rubric is not None:
        manifest["rubric"] = {"criteria": [criterion_entry(c) for c in rubric.criteria.all()]}
    return manifest


def task_draft_hash(task: Task) -> str:
    files = {f.path: f.content.encode() for f in task.files.all()}
    return content_hash(draft_manifest(task), files)


def _rubric_create(rubric: Rubric, criteria: Iterable[tuple[int, Any]]) -> None:
    """Save ``rubric`` with copies of ``criteria`` (position, criterion-like) in one insert."""
    rubric.save()
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
        for position, c in criteria
    )


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
    # A draft edited in the UI keeps the text of the version it came from, edited.
    manifest_text = manifest_text or draft_manifest_text(task)
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
        _rubric_create(
            Rubric(version=version), ((c.position, c) for c in draft_rubric.criteria.all())
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
    manifest["files"] = [file_entry(f) for f in files]
    rubric = Rubric.objects.filter(version=version).first()
    if rubric is not None:
        manifest["rubric"] = {"criteria": [criterion_entry(c) for c in rubric.criteria.all()]}
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
        rendered[f.path] = f.content.encode()
    return rendered


def _imported_manifest(task: Task) -> str:
    digest = task_draft_hash(task)
    same = task.versions.filter(content_hash=digest).exclude(manifest="").first()
    return same.manifest if same is not None else ""


def draft_manifest_text(task: Task) -> str:
    """The draft's task.toml. Unchanged since a version: that version's text. Edited
    since: the newest version's text with only what changed written in (comments,
    order and layout kept; see ``tasks.manifest_text``). Never had a text: generated."""
    if same := _imported_manifest(task):
        return same
    data = draft_manifest(task)
    newest = task.versions.exclude(manifest="").order_by("-number").first()
    if newest is not None:
        return edited_manifest(newest.manifest, data)
    return tomli_w.dumps(data)


def version_manifest_text(version: TaskVersion) -> str:
    return version.manifest or tomli_w.dumps(version_manifest(version))


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


# --- authoring in the browser ------------------------------------------------------------------
#
# Every authoring write checks ``can_edit_task`` (authors edit their own drafts, admins any
# draft) and validates its input with the bundle format's own checks (tasks/bundle.py), so a
# draft edited in the browser always exports as a bundle that imports again. Input errors
# raise Django's ValidationError keyed by the field at fault.

STATEMENT_PATH = "statement.md"
METADATA_FIELDS = ("slug", "title", "kind", "difficulty", "hardware", "tags")
# The bundle name in probe errors; stripped again before errors reach a form.
_PROBE = "draft"


def _default_grading(kind: str) -> dict[str, Any]:
    """The grading table a new draft of ``kind`` starts with (none for a kind without a
    grader)."""
    return registry.get(kind).default_grading() if registry.is_kind(kind) else {}


def _require_editor(user: User, task: Task) -> None:
    _require(
        can_edit_task(user, task), f"{user} cannot edit {task.slug} (only its author, as a draft)"
    )


def _touch(task: Task) -> None:
    """The task's ``updated_at`` follows edits of its files and rubric too."""
    Task.objects.filter(pk=task.pk).update(updated_at=timezone.now())


def _field_head(field: str) -> str:
    return re.split(r"[.\[]", field, maxsplit=1)[0]


def _probe_bundle(manifest: dict[str, Any], files: dict[str, bytes]) -> list[BundleError]:
    """Every problem the bundle checker finds in a bundle made of ``manifest`` and ``files``."""
    data = {MANIFEST: tomli_w.dumps(manifest).encode(), **files}
    try:
        parse_bundle(data, name=_PROBE, grading=False)
    except BundleInvalid as exc:
        return exc.errors
    return []


def _probe_manifest(**fields: Any) -> dict[str, Any]:
    """A minimal valid manifest (one statement file), with ``fields`` replacing its keys."""
    manifest: dict[str, Any] = {
        "slug": "probe",
        "title": "Probe",
        "kind": DEFAULT_KIND,  # its [grading] table is not checked (grading=False)
        "difficulty": "easy",
        "tags": [],
        "hardware": "cpu",
        "statement": STATEMENT_PATH,
        "files": [{"path": STATEMENT_PATH, "visibility": "prompt", "role": "statement"}],
    }
    manifest.update(fields)
    return manifest


def _raise_field_errors(errors: Iterable[tuple[str | None, str]]) -> None:
    """Raise one ValidationError with every (field, message); None is a form-wide error."""
    collected: dict[str, list[str]] = {}
    for field, message in errors:
        collected.setdefault(field or "__all__", []).append(message)
    if collected:
        raise ValidationError(collected)


def _check_metadata(values: dict[str, Any]) -> None:
    problems = _probe_bundle(_probe_manifest(**values), {STATEMENT_PATH: b""})
    _raise_field_errors(
        (_field_head(e.field), e.message)
        for e in problems
        if _field_head(e.field) in values and _field_head(e.field) in METADATA_FIELDS
    )


def _clean_tags(tags: Iterable[str]) -> list[str]:
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if tag and tag not in cleaned:
            cleaned.append(tag)
    return cleaned


@transaction.atomic
def task_create(
    *,
    user: User,
    slug: str,
    title: str,
    kind: str,
    difficulty: str,
    hardware: str,
    tags: Iterable[str] = (),
) -> Task:
    """A new draft owned by ``user``: a statement file, an empty rubric and, for a
    kernel task, default grading settings."""
    _require(roles.has_role(user, roles.AUTHOR), "only authors create tasks")
    values = {
        "slug": slug,
        "title": title,
        "kind": kind,
        "difficulty": difficulty,
        "hardware": hardware,
        "tags": _clean_tags(tags),
    }
    _check_metadata(values)
    if Task.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": [f"{slug!r} is taken by another task"]})
    statement = f"# {title}\n"
    grading = _default_grading(kind)
    try:
        with transaction.atomic():
            task = Task.objects.create(owner=user, statement=statement, grading=grading, **values)
    except IntegrityError:  # created by someone else in the meantime
        raise ValidationError({"slug": [f"{slug!r} is taken by another task"]}) from None
    TaskFile.objects.create(
        task=task,
        path=STATEMENT_PATH,
        content=statement,
        visibility=Visibility.PROMPT,
        role=FileRole.STATEMENT,
    )
    Rubric.objects.create(task=task)
    return task


def task_update_metadata(
    *,
    task: Task,
    user: User,
    title: str,
    kind: str,
    difficulty: str,
    hardware: str,
    tags: Iterable[str] = (),
) -> Task:
    """Change a draft's title, kind, difficulty, target hardware and tags (not its slug)."""
    _require_editor(user, task)
    values: dict[str, Any] = {
        "title": title,
        "kind": kind,
        "difficulty": difficulty,
        "hardware": hardware,
        "tags": _clean_tags(tags),
    }
    _check_metadata(values)
    if kind != task.kind or not task.grading:
        # A grading table is its kind's: another kind starts from its own default.
        values["grading"] = _default_grading(kind)
    for name, value in values.items():
        setattr(task, name, value)
    task.save(update_fields=[*values, "updated_at"])
    return task


def task_statement_update(*, task: Task, user: User, text: str) -> Task:
    """Write the statement (Markdown): the statement file and its mirror on the task."""
    _require_editor(user, task)
    statement = task.files.filter(role=FileRole.STATEMENT).first()
    if statement is None:
        statement = TaskFile(
            task=task, path=STATEMENT_PATH, visibility=Visibility.PROMPT, role=FileRole.STATEMENT
        )
    if len(text.encode()) > MAX_FILE_BYTES:
        raise ValidationError({"statement": [f"is larger than {MAX_FILE_BYTES} bytes"]})
    with transaction.atomic():
        statement.content = text
        statement.save()
        task.statement = text
        task.save(update_fields=["statement", "updated_at"])
    return task


# -- files ---------------------------------------------------------------------------------------


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
    return _probe_bundle(manifest, {e.path: e.content.encode() for e in entries})


def _check_file_change(
    task: Task, before: _Entry | None, after: _Entry, *, exclude: int | None
) -> None:
    """Refuse ``after`` (replacing ``before``, or new) if it adds a bundle problem."""
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
    """An uploaded file's text: bundle files are UTF-8 text of at most 1 MiB."""
    if len(data) > MAX_FILE_BYTES:
        raise ValidationError({"upload": [f"{name} is larger than {MAX_FILE_BYTES} bytes"]})
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError({"upload": [f"{name} is not UTF-8 text"]}) from None
    if "\x00" in text:
        raise ValidationError({"upload": [f"{name} contains a NUL byte; bundle files are text"]})
    return text


# -- grading settings ----------------------------------------------------------------------------


def grading_check(task: Task, grading: dict[str, Any]) -> None:
    """Raise ``GradingTableError`` (its ``field`` a dotted path such as
    ``grading.tolerances.float16.atol``) if ``grading`` is not a valid [grading] table
    for this draft, as the task's kind checks it. Problems with the draft's files are
    left to the bundle check."""
    files = list(task.files.all())
    manifest = {
        "slug": task.slug,
        "kind": task.kind,
        "hardware": task.hardware,
        "grading": grading,
        "files": [{"path": f.path, "role": f.role, "visibility": f.visibility} for f in files],
    }
    registry.get(task.kind).check_draft_grading(manifest, {f.path: f.content for f in files})


def task_grading_update(*, task: Task, user: User, grading: dict[str, Any]) -> Task:
    """Replace the draft's [grading] table after its kind has checked it."""
    _require_editor(user, task)
    _require(registry.is_kind(task.kind), f"no grader is registered for {task.kind} tasks")
    try:
        json.dumps(grading, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise GradingTableError("grading", f"cannot be stored: {exc}") from None
    grading_check(task, grading)
    task.grading = grading
    task.save(update_fields=["grading", "updated_at"])
    return task


# -- rubric --------------------------------------------------------------------------------------


def _criterion_check(rubric: Rubric, entry: dict[str, Any], *, exclude: int | None = None) -> None:
    """Check one criterion with the bundle format's rules, and its id against the others."""
    errors: list[tuple[str | None, str]] = []
    owner = rubric.task or rubric.version
    kind = owner.kind if owner is not None else DEFAULT_KIND  # whose rule types apply
    for error in _probe_bundle(
        _probe_manifest(kind=kind, rubric={"criteria": [entry]}), {STATEMENT_PATH: b""}
    ):
        prefix = "rubric.criteria[0]."
        field = error.field.removeprefix(prefix) if error.field.startswith(prefix) else ""
        errors.append((_field_head(field) or None, error.message))
    criteria = rubric.criteria.all() if exclude is None else rubric.criteria.exclude(pk=exclude)
    if criteria.filter(key=entry.get("id")).exists():
        errors.append(("key", f"{entry.get('id')!r} is used by another criterion"))
    _raise_field_errors([("key" if f == "id" else f, m) for f, m in errors])


def _criterion_fields(
    *,
    key: str,
    title: str,
    description: str,
    points: int,
    kind: str,
    rule: dict[str, Any] | None,
    levels: list[dict[str, Any]] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the criterion as a manifest entry, its model fields)."""
    fields = {
        "key": key,
        "title": title,
        "description": description,
        "points": points,
        "kind": kind,
        "rule": dict(rule or {}) if kind == "automatic" else {},
        "levels": list(levels or []) if kind == "human" else [],
    }
    entry: dict[str, Any] = {"id": key, "title": title, "points": points, "kind": kind}
    if description:
        entry["description"] = description
    if kind == "automatic":
        entry["rule"] = fields["rule"]
    elif kind == "human":
        entry["levels"] = fields["levels"]
    return entry, fields


def _draft_rubric(task: Task) -> Rubric:
    rubric, _ = Rubric.objects.get_or_create(task=task)
    return rubric


@transaction.atomic
def rubric_criterion_add(
    *,
    task: Task,
    user: User,
    key: str,
    title: str,
    points: int,
    kind: str,
    description: str = "",
    rule: dict[str, Any] | None = None,
    levels: list[dict[str, Any]] | None = None,
) -> Criterion:
    """Append a criterion to the draft's rubric (created if the draft has none)."""
    _require_editor(user, task)
    rubric = _draft_rubric(task)
    entry, fields = _criterion_fields(
        key=key, title=title, description=description, points=points, kind=kind, rule=rule,
        levels=levels,
    )  # fmt: skip
    _criterion_check(rubric, entry)
    last = rubric.criteria.aggregate(last=Max("position"))["last"]
    criterion = Criterion.objects.create(
        rubric=rubric, position=0 if last is None else last + 1, **fields
    )
    _touch(task)
    return criterion


def _criterion_task(criterion: Criterion) -> Task:
    task = criterion.rubric.task
    _require(task is not None, "criteria of a frozen version cannot change")
    assert task is not None
    return task


@transaction.atomic
def rubric_criterion_update(
    *,
    criterion: Criterion,
    user: User,
    key: str,
    title: str,
    points: int,
    kind: str,
    description: str = "",
    rule: dict[str, Any] | None = None,
    levels: list[dict[str, Any]] | None = None,
) -> Criterion:
    task = _criterion_task(criterion)
    _require_editor(user, task)
    entry, fields = _criterion_fields(
        key=key, title=title, description=description, points=points, kind=kind, rule=rule,
        levels=levels,
    )  # fmt: skip
    _criterion_check(criterion.rubric, entry, exclude=criterion.pk)
    for name, value in fields.items():
        setattr(criterion, name, value)
    criterion.save(update_fields=[*fields, "updated_at"])
    _touch(task)
    return criterion


def _renumber(ordered: list[Criterion]) -> None:
    for position, criterion in enumerate(ordered):
        criterion.position = position
    Criterion.objects.bulk_update(ordered, ["position"])


@transaction.atomic
def rubric_criterion_delete(*, criterion: Criterion, user: User) -> None:
    task = _criterion_task(criterion)
    _require_editor(user, task)
    rubric = criterion.rubric
    criterion.delete()
    _renumber(list(rubric.criteria.order_by("position", "pk")))
    _touch(task)


@transaction.atomic
def rubric_criterion_move(*, criterion: Criterion, user: User, offset: int) -> None:
    """Move a criterion ``offset`` places (negative: up); clamped at either end."""
    task = _criterion_task(criterion)
    _require_editor(user, task)
    ordered = list(criterion.rubric.criteria.select_for_update().order_by("position", "pk"))
    index = next(i for i, c in enumerate(ordered) if c.pk == criterion.pk)
    target = max(0, min(len(ordered) - 1, index + offset))
    ordered.insert(target, ordered.pop(index))
    _renumber(ordered)
    _touch(task)


# -- checking and validating a draft -------------------------------------------------------------


def draft_problems(task: Task) -> list[BundleError]:
    """Every problem the bundle checker finds in the draft (empty: it would import)."""
    try:
        rendered = bundle_render(task=task)
    except ExportError as exc:
        return [BundleError(task.slug, "files", str(exc))]
    try:
        parse_bundle(rendered, name=task.slug)
    except BundleInvalid as exc:
        return exc.errors
    return []


class DraftInvalid(Exception):
    """The draft does not pass the bundle check; ``errors`` says where."""

    def __init__(self, errors: list[BundleError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


def task_validate(*, task: Task, user: User) -> ValidationRun:
    """Validate the draft as it is: the run already going for this content, or a new one.

    The draft must pass the bundle check first: grading a draft whose settings cannot
    be read would only report internal errors.
    """
    from .validation import validation_start

    _require_editor(user, task)
    problems = draft_problems(task)
    if problems:
        raise DraftInvalid(problems)
    running = task.validation_runs.filter(
        content_hash=task_draft_hash(task), status=ValidationStatus.RUNNING
    ).first()
    return running or validation_start(task=task, user=user)


# -- bundle zips ---------------------------------------------------------------------------------

MAX_ZIP_BYTES = MAX_TOTAL_BYTES + 4 * 1024 * 1024  # the upload itself, compressed
# Zip metadata some archivers add beside the content; never part of a bundle.
ZIP_NOISE = ("__MACOSX/",)


def _zip_error(name: str, entry: str, message: str) -> BundleError:
    return BundleError(f"{name}/{entry}" if entry else name, "", message)


def _zip_members(
    archive: zipfile.ZipFile, name: str
) -> tuple[list[zipfile.ZipInfo], list[BundleError]]:
    """The file entries worth reading, and the problems that refuse the archive."""
    members: list[zipfile.ZipInfo] = []
    errors: list[BundleError] = []
    for info in archive.infolist():
        if info.is_dir() or info.filename.startswith(ZIP_NOISE):
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            errors.append(
                _zip_error(
                    name, info.filename, "is a symbolic link; bundles hold only regular files"
                )
            )
        elif info.flag_bits & 0x1:
            errors.append(_zip_error(name, info.filename, "is encrypted"))
        elif info.file_size > MAX_FILE_BYTES:
            errors.append(_zip_error(name, info.filename, f"is larger than {MAX_FILE_BYTES} bytes"))
        else:
            members.append(info)
        if len(members) > MAX_FILES + 1:
            errors.append(_zip_error(name, "", f"holds over {MAX_FILES} files"))
            break
    return members, errors


def _bundle_root(paths: list[str]) -> str:
    """The one folder the whole bundle sits in (``relu/task.toml``), or ``""``."""
    if MANIFEST in paths:
        return ""
    heads = {p.split("/", 1)[0] for p in paths}
    if len(heads) == 1 and all("/" in p for p in paths):
        return f"{heads.pop()}/"
    return ""


def bundle_zip_read(data: bytes, *, name: str) -> dict[str, bytes]:
    """A bundle's files (path -> bytes) from a zip held in memory, nothing written to disk.

    Refuses links, encrypted entries, unsafe paths and anything past the bundle format's
    caps; sizes are checked on the bytes actually inflated, not only the ones the zip
    declares. Raises BundleInvalid with every problem found.
    """
    if len(data) > MAX_ZIP_BYTES:
        raise BundleInvalid(
            [_zip_error(name, "", f"the upload is larger than {MAX_ZIP_BYTES} bytes")]
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise BundleInvalid([_zip_error(name, "", f"is not a zip file ({exc})")]) from None
    with archive:
        members, errors = _zip_members(archive, name)
        if errors:
            raise BundleInvalid(errors)
        root = _bundle_root([m.filename for m in members])
        return _zip_read_members(archive, members, root, name)


def _zip_read_members(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], root: str, name: str
) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    errors: list[BundleError] = []
    total = 0
    for info in members:
        path = info.filename.removeprefix(root)
        if any(part in IGNORED_DIRS for part in PurePosixPath(path).parts):
            continue
        why = None if path == MANIFEST else path_problem(path)
        if why or path in files:
            errors.append(_zip_error(name, info.filename, f"the path {why or 'appears twice'}"))
            continue
        try:
            with archive.open(info) as handle:
                content = handle.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
            errors.append(_zip_error(name, info.filename, f"cannot be read: {exc}"))
            continue
        total += len(content)
        if total > MAX_TOTAL_BYTES:
            errors.append(_zip_error(name, "", f"the files total over {MAX_TOTAL_BYTES} bytes"))
            break
        files[path] = content
    if errors:
        raise BundleInvalid(errors)
    return files


def bundle_zip_import(*, data: bytes, filename: str, user: User) -> ImportResult:
    """Import an uploaded bundle zip as a draft of ``user``'s (never published: a
    reviewer publishes it). Raises BundleInvalid listing every problem, or
    PermissionDenied."""
    _require(roles.has_role(user, roles.AUTHOR), "only authors import tasks")
    name = PurePosixPath(filename or "bundle.zip").stem or "bundle"
    bundle = parse_bundle(bundle_zip_read(data, name=name), name=name)
    existing = Task.objects.filter(slug=bundle.slug).first()
    problems = _import_problems(existing, user, publish=False)
    if existing is not None and existing.status != TaskStatus.DRAFT:
        problems.append(
            f"task {existing.slug} is {existing.get_status_display().lower()}; "
            "only a draft can be overwritten"
        )
    if problems:
        raise PermissionDenied("; ".join(problems))
    return bundle_import(bundle=bundle, user=user, publish=False)


def bundle_zip_build(*, task: Task | None = None, version: TaskVersion | None = None) -> bytes:
    """``bundle_render``'s files as a zip, under one folder named after the task.
    Holds hidden files: callers decide who may download it."""
    rendered = bundle_render(task=task, version=version)
    slug = version.task.slug if version is not None else task.slug if task is not None else ""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in rendered.items():
            info = zipfile.ZipInfo(f"{slug}/{path}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


# --- task review -------------------------------------------------------------------------------


def reviewer_may_decide(user: User, task: Task) -> bool:
    """Reviewers review others' tasks; an admin may also review their own."""
    if not roles.has_role(user, roles.REVIEWER):
        return False
    return task.owner_id != user.pk or roles.is_admin(user)


def _require_reviewer(user: User, task: Task) -> None:
    _require(reviewer_may_decide(user, task), "only a reviewer other than the author may review")
    _require(task.status == TaskStatus.IN_REVIEW, f"{task.slug} is not in review")


def task_review_comment_add(
    *, task: Task, reviewer: User, path: str, line: int, body: str
) -> TaskReviewComment:
    """A pending comment on one line of a draft file; it goes to the author with the
    reviewer's decision."""
    _require_reviewer(reviewer, task)
    file = task.files.filter(path=path).first()
    if file is None:
        raise ValidationError({"path": [f"{path!r} is not a file of this task"]})
    lines = file.content.splitlines()
    if not 1 <= line <= max(len(lines), 1):
        raise ValidationError({"line": [f"{path} has no line {line}"]})
    body = body.strip()
    if not body:
        raise ValidationError({"body": ["write a comment"]})
    return TaskReviewComment.objects.create(
        task=task,
        author=reviewer,
        path=path,
        line=line,
        line_text=lines[line - 1] if lines else "",
        content_hash=task_draft_hash(task),
        body=body,
    )


def task_review_comment_delete(*, comment: TaskReviewComment, user: User) -> None:
    _require(
        comment.author_id == user.pk and comment.review_id is None,
        "only its author can delete a comment, before deciding",
    )
    comment.delete()


@transaction.atomic
def task_review_decide(
    *, task: Task, reviewer: User, decision: str, comment: str = ""
) -> TaskReview:
    """Approve (publish an immutable version) or request changes (back to the author,
    with the overall comment and the reviewer's pending line comments).

    The reviewed draft is kept on the review, so the next review shows what changed.
    """
    task = Task.objects.select_for_update().get(pk=task.pk)
    _require_reviewer(reviewer, task)
    if decision not in ReviewDecision.values:
        raise ValidationError({"decision": [f"{decision!r} is not a decision"]})
    pending = TaskReviewComment.objects.filter(task=task, review=None, author=reviewer)
    if decision == ReviewDecision.CHANGES_REQUESTED and not (comment.strip() or pending.exists()):
        raise ValidationError({"comment": ["say what should change (or comment on a line)"]})
    files = {f.path: f.content for f in task.files.all()}
    review = TaskReview(
        task=task,
        reviewer=reviewer,
        decision=decision,
        comment=comment.strip(),
        content_hash=task_draft_hash(task),
        manifest=draft_manifest_text(task),
        files=files,
    )
    if decision == ReviewDecision.APPROVED:
        review.version = task_publish(task=task, reviewer=reviewer)
    else:
        task_request_changes(task=task, reviewer=reviewer)
    review.save()
    pending.update(review=review)
    return review
