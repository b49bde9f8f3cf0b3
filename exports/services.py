"""Every write of the exports app: definitions and their versions, snapshots and
their builds.

A build runs in a Celery job (``jobs.build_snapshot_job``): it claims the
snapshot (queued -> running, one conditional UPDATE), builds the dataset in a
temporary folder, writes it and its tar.gz through Django's default storage
under ``exports/<definition>/v<version>/snapshot-<id>``, and records the
manifest. A build whose worker died is reclaimed once its progress has been
silent for ``STALE_AFTER``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import transaction
from django.db.models import F, Max, Q, QuerySet
from django.utils import timezone

from benchwright.state import InvalidTransition, transition

from . import selectors
from .build import Builder, BuildResult
from .card import card_text, manifest
from .models import (
    SNAPSHOT_TRANSITIONS,
    DefinitionVersion,
    ExportDefinition,
    LeftOutRow,
    Snapshot,
    SnapshotStatus,
)
from .spec import Spec, SpecError
from .writer import file_sha256, write_archive

logger = logging.getLogger(__name__)

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?$")
RESERVED_SLUGS = frozenset({"new", "snapshots"})  # page paths beside /exports/<slug>/
STALE_AFTER = timedelta(minutes=10)
PROGRESS_EVERY_S = 0.5
ERROR_CHARS = 2000
SCRATCH = ".export-scratch"  # under local storage's root: where builds write


class NotAllowed(Exception):
    """The user may not do this to this definition or snapshot."""


class BuildAborted(Exception):
    """The snapshot stopped being this build's (failed or reclaimed meanwhile)."""


# Definitions ---------------------------------------------------------------------------------


def spec_of(version: DefinitionVersion) -> Spec:
    return Spec.parse(version_content(version))


def version_content(version: DefinitionVersion) -> dict[str, Any]:
    return {
        "title": version.title,
        "description": version.description,
        "format": version.format,
        "filters": version.filters,
        "split": version.split,
        "seed": version.seed,
        "include_submitter": version.include_submitter,
        "options": version.options,
    }


@transaction.atomic
def definition_create(*, owner: User, slug: str, data: Mapping[str, Any]) -> ExportDefinition:
    """A new definition and its version 1; raises SpecError (field -> messages)."""
    if not selectors.may_export(owner):
        raise NotAllowed("only admins and exporters define exports")
    errors: dict[str, list[str]] = {}
    if not SLUG.match(slug or "") or slug in RESERVED_SLUGS:
        errors["slug"] = ["Lowercase letters, digits and hyphens, 1-80 characters."]
    elif ExportDefinition.objects.filter(slug=slug).exists():
        errors["slug"] = ["An export definition with this name exists."]
    try:
        spec = Spec.parse(data)
    except SpecError as exc:
        errors |= exc.errors
    if errors:
        raise SpecError(errors)
    definition = ExportDefinition.objects.create(slug=slug, owner=owner)
    version = _freeze(definition, spec, owner)
    ExportDefinition.objects.filter(pk=definition.pk).update(current_version=version)
    definition.refresh_from_db()
    return definition


@transaction.atomic
def definition_update(
    *, definition_id: int, user: User, data: Mapping[str, Any]
) -> DefinitionVersion:
    """Edit a definition: new content freezes a new version, content it had before
    returns to that version. Snapshots keep the version they were built from."""
    definition = ExportDefinition.objects.select_for_update().get(pk=definition_id)
    if not selectors.can_edit_definition(user, definition):
        raise NotAllowed("only the owner or an admin edits a definition")
    spec = Spec.parse(data)
    version = definition.versions.filter(content_hash=spec.content_hash).first()
    if version is None:
        version = _freeze(definition, spec, user)
    ExportDefinition.objects.filter(pk=definition.pk).update(
        current_version=version, updated_at=timezone.now()
    )
    return version


def _freeze(definition: ExportDefinition, spec: Spec, user: User) -> DefinitionVersion:
    last = definition.versions.aggregate(n=Max("number"))["n"] or 0
    content = spec.to_dict()
    return DefinitionVersion.objects.create(
        definition=definition,
        number=last + 1,
        content_hash=spec.content_hash,
        title=content["title"],
        description=content["description"],
        format=content["format"],
        filters=content["filters"],
        split=content["split"],
        seed=content["seed"],
        include_submitter=content["include_submitter"],
        options=content["options"],
        created_by=user,
    )


# Snapshots -----------------------------------------------------------------------------------


def snapshot_create(*, definition: ExportDefinition, user: User) -> Snapshot:
    """Queue a build of the definition's current version; it starts once the
    transaction commits."""
    if not selectors.definitions_for_user(user).filter(pk=definition.pk).exists():
        raise NotAllowed("this definition is not yours to export")
    # Read afresh: the caller's object may predate an edit.
    version = DefinitionVersion.objects.get(
        pk=ExportDefinition.objects.filter(pk=definition.pk).values("current_version")[:1]
    )
    snapshot = Snapshot.objects.create(
        version=version,
        created_by=user,
        includes_submitter=version.include_submitter and selectors.may_see_submitters(user),
    )
    from .jobs import build_snapshot_job

    transaction.on_commit(
        lambda: build_snapshot_job.apply_async(args=(snapshot.pk,), ignore_result=True)
    )
    return snapshot


class SnapshotBusy(Exception):
    """The snapshot is queued or being built: it cannot be deleted now."""


def snapshot_delete(*, snapshot_id: int) -> None:
    """Delete a finished snapshot (succeeded or failed) and, once that commits, its
    files in storage. A queued or running one is refused: its build would go on
    writing files that nothing refers to."""
    snapshot = Snapshot.objects.select_related("version__definition").get(pk=snapshot_id)
    prefix = storage_prefix(snapshot)
    deleted, _ = Snapshot.objects.filter(
        pk=snapshot_id, status__in=[SnapshotStatus.SUCCEEDED, SnapshotStatus.FAILED]
    ).delete()
    if not deleted:
        raise SnapshotBusy(f"snapshot {snapshot_id} is {snapshot.status}; wait for it to finish")
    transaction.on_commit(lambda: _discard_prefix(prefix))


def snapshot_claim(*, snapshot_id: int) -> int | None:
    """queued -> running, or a stale running build -> running again (its worker
    died). One conditional UPDATE, so two workers never both claim the same
    attempt. Returns the attempt number claimed, or None."""
    now = timezone.now()
    claimable = Q(status=SnapshotStatus.QUEUED) | Q(
        status=SnapshotStatus.RUNNING, updated_at__lt=now - STALE_AFTER
    )
    claimed = Snapshot.objects.filter(claimable, pk=snapshot_id).update(
        status=SnapshotStatus.RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        updated_at=now,
        items_done=0,
        rows_written=0,
    )
    if claimed != 1:
        return None
    return Snapshot.objects.values_list("attempts", flat=True).get(pk=snapshot_id)


def _mine(snapshot_id: int, attempt: int) -> QuerySet[Snapshot]:
    """The snapshot while this attempt still owns it: a reclaimed build's late writes
    (progress, result) change nothing."""
    return Snapshot.objects.filter(pk=snapshot_id, status=SnapshotStatus.RUNNING, attempts=attempt)


def snapshot_build(*, snapshot_id: int) -> str:
    """Claim and build a snapshot; returns its final status (or "not claimed")."""
    attempt = snapshot_claim(snapshot_id=snapshot_id)
    if attempt is None:
        return "not claimed"
    snapshot = Snapshot.objects.select_related("version__definition").get(pk=snapshot_id)
    try:
        _build(snapshot, attempt)
    except BuildAborted:
        logger.warning("export snapshot %s attempt %s was taken over", snapshot_id, attempt)
        return "aborted"
    except Exception as exc:
        logger.exception("export snapshot %s failed", snapshot_id)
        try:
            _finish(
                snapshot.pk,
                attempt,
                SnapshotStatus.FAILED,
                error=f"{type(exc).__name__}: {exc}"[:ERROR_CHARS],
            )
        except BuildAborted:
            return "aborted"
        discard_files(snapshot)
        return SnapshotStatus.FAILED
    return SnapshotStatus.SUCCEEDED


@dataclass
class _Progress:
    """Writes build progress to the snapshot at most every PROGRESS_EVERY_S; each
    write is also the build's heartbeat."""

    snapshot_id: int
    attempt: int
    last: float = 0.0

    def __call__(self, done: int, total: int, rows: int) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and done < total:
            return
        self.last = now
        updated = _mine(self.snapshot_id, self.attempt).update(
            items_done=done, items_total=total, rows_written=rows, updated_at=timezone.now()
        )
        if updated != 1:
            raise BuildAborted(f"snapshot {self.snapshot_id} attempt {self.attempt} was taken over")


def storage_prefix(snapshot: Snapshot) -> str:
    version = snapshot.version
    return f"exports/{version.definition.slug}/v{version.number}/snapshot-{snapshot.pk}"


def _build(snapshot: Snapshot, attempt: int) -> None:
    """Build in a temporary folder, then store the files and record the result,
    both only while this attempt still owns the snapshot."""
    version = snapshot.version
    spec = spec_of(version)
    prefix = storage_prefix(snapshot)
    with tempfile.TemporaryDirectory(prefix="benchwright-export-", dir=_scratch_root()) as tmp:
        folder = Path(tmp) / "dataset"
        folder.mkdir()
        result = Builder(
            spec,
            folder,
            identities=snapshot.includes_submitter,
            progress=_Progress(snapshot.pk, attempt),
        ).run()
        exported_at = timezone.now()
        files = _write_card_and_manifest(snapshot, folder, spec, result, exported_at)
        archive = Path(tmp) / "snapshot.tar.gz"
        top = prefix.rsplit("/", 1)[-1]
        write_archive(
            archive, folder, top, files, int(exported_at.timestamp()), result.archive_parts
        )
        if not _mine(snapshot.pk, attempt).update(updated_at=timezone.now()):
            raise BuildAborted(f"snapshot {snapshot.pk} attempt {attempt} was taken over")
        discard_files(snapshot)  # what an earlier, dead attempt left
        for path in files:
            _store(f"{prefix}/{path.relative_to(folder).as_posix()}", path)
        archive_name = _store(f"{prefix}.tar.gz", archive)
        with transaction.atomic():
            _finish(
                snapshot.pk,
                attempt,
                SnapshotStatus.SUCCEEDED,
                storage_prefix=prefix,
                archive_name=archive_name,
                archive_sha256=file_sha256(archive),
                archive_bytes=archive.stat().st_size,
                manifest=json.loads((folder / "manifest.json").read_text(encoding="utf-8")),
                items_done=result.items_total,
                items_total=result.items_total,
                rows_written=sum(result.rows.values()),
            )
            _record_left_out(snapshot.pk, result)


def _record_left_out(snapshot_id: int, result: BuildResult) -> None:
    """The build's examples of rows left out, for the snapshot page."""
    LeftOutRow.objects.bulk_create(
        LeftOutRow(
            snapshot_id=snapshot_id,
            reason=item.reason,
            task_version_id=item.task_version_id,
            submission_id=item.submission_id,
            detail=item.detail,
        )
        for item in result.left_out
    )


def _finish(snapshot_id: int, attempt: int, status: str, **fields: Any) -> None:
    """running -> succeeded or failed, if this attempt still owns the snapshot."""
    try:
        transition(
            Snapshot.objects.filter(attempts=attempt),
            snapshot_id,
            to=status,
            allowed=SNAPSHOT_TRANSITIONS,
            from_=SnapshotStatus.RUNNING,
            finished_at=timezone.now(),
            **fields,
        )
    except InvalidTransition:
        raise BuildAborted(f"snapshot {snapshot_id} attempt {attempt} was taken over") from None


def _write_card_and_manifest(
    snapshot: Snapshot, folder: Path, spec: Spec, result: BuildResult, exported_at: datetime
) -> list[Path]:
    version = snapshot.version
    content = spec.to_dict()
    card = folder / "README.md"
    card.write_text(
        card_text(
            slug=version.definition.slug, version=version.number, spec=content, result=result
        ),
        encoding="utf-8",
    )
    files = [card, *result.files]
    data = manifest(
        folder=folder,
        files=files,
        snapshot_id=snapshot.pk,
        slug=version.definition.slug,
        version=version.number,
        spec=content,
        result=result,
        exported_at=exported_at.isoformat().replace("+00:00", "Z"),
        includes_submitter=snapshot.includes_submitter,
    )
    path = folder / "manifest.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [*files, path]


def _local_path(name: str) -> Path | None:
    """Where file-system storage keeps ``name``; None for any other storage (some,
    like the in-memory one, have a ``path()`` with nothing on disk behind it)."""
    if not isinstance(default_storage, FileSystemStorage):
        return None
    return Path(default_storage.path(name))


def _scratch_root() -> str | None:
    """Builds write beside local storage, on the same disk, so that storing a
    file is a hard link rather than a copy of a hundred megabytes. With remote
    storage, the system's temporary directory."""
    root = _local_path(SCRATCH)
    if root is None:
        return None
    root.mkdir(parents=True, exist_ok=True)
    return str(root)


def _store(name: str, path: Path) -> str:
    """Put a built file into storage under ``name``: on local storage a hard link
    (with the permissions the storage gives files it saves), elsewhere a copy."""
    target = _local_path(name)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)  # never replaces a file already there
            mode = getattr(default_storage, "file_permissions_mode", None)
            if mode is not None:
                os.chmod(target, mode)
            return name
        except FileExistsError:
            raise RuntimeError(f"storage already holds {name}") from None
        except OSError:
            pass  # another disk after all, or one without hard links: copy
    with path.open("rb") as fh:
        stored = default_storage.save(name, File(fh, name=path.name))
    if stored != name:
        raise RuntimeError(f"storage put {name} at {stored}")
    return stored


def discard_files(snapshot: Snapshot) -> None:
    """Remove whatever this snapshot has in storage (a failed or dead build's files)."""
    _discard_prefix(storage_prefix(snapshot))


def _discard_prefix(prefix: str) -> None:
    for name in (f"{prefix}.tar.gz", *_stored_under(prefix)):
        if default_storage.exists(name):
            default_storage.delete(name)


def _stored_under(prefix: str) -> list[str]:
    try:
        folders, files = default_storage.listdir(prefix)
    except (FileNotFoundError, NotImplementedError):
        return []
    names = [f"{prefix}/{name}" for name in files]
    for folder in folders:
        names += _stored_under(f"{prefix}/{folder}")
    return names
