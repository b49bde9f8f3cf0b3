"""Bundle zips: reading an uploaded one and building one to download."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import PurePosixPath

from django.contrib.auth.models import User

from benchwright import roles

from ..bundle import (
    IGNORED_DIRS,
    MANIFEST,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    BundleError,
    BundleInvalid,
    parse_bundle,
    path_problem,
)
from ..models import (
    Task,
    TaskStatus,
    TaskVersion,
)
from .bundles import ImportResult, _import_problems, bundle_import, bundle_render
from .lifecycle import PermissionDenied, _require

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
