"""Gzip files in bundles: kept as base64 text, given back byte for byte."""

from __future__ import annotations

import base64
import gzip
import hashlib

import pytest

from graders.filetext import file_bytes, is_binary, stored_text
from tasks import services
from tasks.bundle import BundleInvalid, parse_bundle
from tasks.models import Task
from tests.tasks.test_bundle import valid_files, write_bundle
from tests.tasks.test_import_export import SLUG, read_tree, run

TRACE = gzip.compress(b'{"traceEvents": []}\n', mtime=0)
ENTRY = '\n[[files]]\npath = "traces/rank0.json.gz"\nvisibility = "prompt"\nrole = "artifact"\n'


def with_trace(data: bytes = TRACE) -> dict[str, bytes]:
    files = valid_files()
    files["task.toml"] = files["task.toml"].replace(
        b"\n[[files]]", ENTRY.encode() + b"\n[[files]]", 1
    )
    files["traces/rank0.json.gz"] = data
    return files


def test_a_gzip_file_is_stored_as_base64_and_read_back_unchanged():
    bundle = parse_bundle(with_trace(), name=SLUG)
    trace = next(f for f in bundle.files if f.path == "traces/rank0.json.gz")
    assert is_binary(trace.path) and not is_binary("traces/rank0.json")
    assert trace.text == base64.b64encode(TRACE).decode()
    assert file_bytes(trace.path, trace.text) == TRACE
    assert stored_text("a.py", b"x = 1\n") == "x = 1\n"


def test_a_gz_file_that_is_not_gzip_is_named():
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle(with_trace(b'{"traceEvents": []}'), name=SLUG)
    assert [(e.path, e.message) for e in caught.value.errors] == [
        (f"{SLUG}/traces/rank0.json.gz", "is not gzip data, yet its name ends in .gz")
    ]


def test_stored_content_that_is_not_base64_is_refused():
    with pytest.raises(ValueError, match="not base64"):
        file_bytes("t.json.gz", "not base64!")


@pytest.mark.django_db
def test_import_then_export_keeps_a_gzip_trace_byte_for_byte(tmp_path):
    folder = write_bundle(tmp_path / "catalog" / SLUG, with_trace())
    run("import_tasks", str(folder))
    task = Task.objects.get(slug=SLUG)
    stored = task.files.get(path="traces/rank0.json.gz")
    assert stored.content == base64.b64encode(TRACE).decode()
    assert stored.sha256 == hashlib.sha256(TRACE).hexdigest()
    run("export_task", SLUG, str(tmp_path / "out"))
    assert read_tree(tmp_path / "out") == read_tree(folder)
    assert services.task_draft_hash(task) == task.current_version.content_hash


@pytest.mark.django_db
def test_an_uploaded_gzip_file_is_kept_as_base64_and_garbage_is_refused():
    from django.core.exceptions import ValidationError

    assert (
        services.task_file_from_upload(TRACE, name="t/rank0.json.gz")
        == base64.b64encode(TRACE).decode()
    )
    with pytest.raises(ValidationError, match="not gzip data"):
        services.task_file_from_upload(b"plain", name="t/rank0.json.gz")
