"""A task's manifest, as the dict a task.toml parses to and as its text, for a draft
and for a frozen version; and the content hash over a manifest and its files, on
which validation runs, reviews and versions are keyed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import tomli_w

from graders.filetext import file_bytes
from rubrics.models import Rubric

from ..bundle import criterion_entry, file_entry
from ..manifest_text import edited as edited_manifest
from ..models import FileRole, Task, TaskVersion


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
    files = {f.path: file_bytes(f.path, f.content) for f in task.files.all()}
    return content_hash(draft_manifest(task), files)


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
