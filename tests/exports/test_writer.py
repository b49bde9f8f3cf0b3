"""The split writer makes each Parquet row group by parsing the batch's JSON lines
with Arrow, on a background thread: both files must hold exactly the rows given,
whatever their values, and a failure there must reach the build. The tar.gz is
a series of gzip members, the JSON lines' compressed during the build: it must
decompress to exactly the tar that ``tarfile`` writes, and GNU tar must read it."""

from __future__ import annotations

import errno
import gc
import gzip
import hashlib
import io
import json
import os
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exports import build as export_build
from exports import services as export_services
from exports.formats import CHAT
from exports.models import Snapshot
from exports.writer import SplitWriter, tar_info, write_archive
from tests.exports.conftest import all_rows, build, define, snapshot_folder

SCHEMA = pa.schema(
    [
        ("messages", CHAT),
        ("count", pa.int32()),
        ("big", pa.int64()),
        ("ratio", pa.float64()),
        ("flag", pa.bool_()),
        ("tags", pa.list_(pa.string())),
        ("note", pa.string()),
    ]
)
AWKWARD: list[dict[str, Any]] = [
    {
        "messages": [{"role": "user", "content": 'tab\t, quote ", backslash \\, NUL \x00'}],
        "count": -(2**31),
        "big": 2**63 - 1,
        "ratio": 0.1 + 0.2,
        "flag": True,
        "tags": [],
        "note": "line\u2028separator, é, 😀, \u00a0",
    },
    {
        "messages": [],
        "count": None,
        "big": None,
        "ratio": None,
        "flag": None,
        "tags": None,
        "note": None,
    },
    {
        "messages": [{"role": "assistant", "content": "x" * 200_000}],
        "count": 2**31 - 1,
        "big": -(2**63),
        "ratio": 1e308,
        "flag": False,
        "tags": ["a", ""],
        "note": "",
    },
    {
        "messages": [{"role": "user", "content": ""}],
        "count": 0,
        "big": 0,
        "ratio": 5,  # an int in a float column
        "flag": False,
        "tags": ["only"],
        "note": "5e-324 is the smallest double",
    },
]


def write_rows(folder: Path, rows: list[dict[str, Any]], monkeypatch, group: int = 3) -> list[Path]:
    monkeypatch.setattr("exports.writer.ROW_GROUP_ROWS", group)
    with ThreadPoolExecutor(max_workers=1) as pool:
        writer = SplitWriter(folder, "train", SCHEMA, pool, folder / "parts")
        for row in rows:
            writer.write(row)
        return writer.close()


def test_both_files_hold_exactly_the_rows_given_whatever_their_values(tmp_path, monkeypatch):
    rows = AWKWARD * 2  # eight rows: row groups of three, three and two

    jsonl, parquet = write_rows(tmp_path, rows, monkeypatch)

    # JSON Lines ends a line at "\n" only: U+2028 inside a string is no line end.
    lines = jsonl.read_bytes().split(b"\n")
    assert lines.pop() == b""
    assert [json.loads(line) for line in lines] == rows
    table = pq.read_table(parquet)
    assert table.schema.remove_metadata() == SCHEMA
    expected = [
        row | {"ratio": None if row["ratio"] is None else float(row["ratio"])} for row in rows
    ]
    assert table.to_pylist() == expected
    metadata = pq.read_metadata(parquet)
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [3, 3, 2]


def test_the_same_rows_give_the_same_bytes(tmp_path, monkeypatch):
    first = write_rows(tmp_path / "one", AWKWARD * 3, monkeypatch)
    second = write_rows(tmp_path / "two", AWKWARD * 3, monkeypatch)

    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_a_value_the_schema_cannot_hold_fails_the_write_with_arrows_reason(tmp_path, monkeypatch):
    rows = [AWKWARD[0] | {"count": 2**31}]  # past int32

    with pytest.raises(pa.ArrowInvalid, match="int32"):
        write_rows(tmp_path, rows, monkeypatch)


def test_a_failure_on_the_writer_thread_fails_the_build_and_leaves_nothing(
    world, monkeypatch, settings
):
    def broken(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(SplitWriter, "_write_batch", broken)
    definition = define(world.owner, format="sft")
    snapshot = export_services.snapshot_create(definition=definition, user=world.owner)

    assert export_services.snapshot_build(snapshot_id=snapshot.pk) == "failed"

    snapshot = Snapshot.objects.get(pk=snapshot.pk)
    assert "No space left on device" in snapshot.error
    media = Path(settings.MEDIA_ROOT)
    assert [p for p in media.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("fmt", ["sft", "preference", "rl", "critique"])
def test_parquet_holds_the_jsonl_rows_in_every_format(world, fmt):
    snapshot = build(define(world.owner, format=fmt), world.owner)

    folder = snapshot_folder(snapshot) / "data"
    from_parquet = [
        row
        for split in ("train", "validation", "test")
        if (folder / f"{split}.parquet").exists()
        for row in pq.read_table(folder / f"{split}.parquet").to_pylist()
    ]
    assert from_parquet == all_rows(snapshot)
    assert from_parquet


def test_the_collector_settings_come_back_after_a_build_even_a_failed_one(world, monkeypatch):
    before = gc.get_threshold()
    seen = []
    real = export_build.Builder._run

    def spy(self):
        seen.append(gc.get_threshold())
        return real(self)

    monkeypatch.setattr(export_build.Builder, "_run", spy)
    build(define(world.owner, format="sft"), world.owner)
    assert seen[0][0] == export_build.YOUNG_COLLECTION_EVERY
    assert gc.get_threshold() == before

    monkeypatch.setattr(export_build.Builder, "_run", lambda self: 1 / 0)
    definition = define(world.owner, slug="broken", format="sft")
    snapshot = export_services.snapshot_create(definition=definition, user=world.owner)
    assert export_services.snapshot_build(snapshot_id=snapshot.pk) == "failed"
    assert gc.get_threshold() == before


def test_stored_files_are_links_to_the_built_ones_and_scratch_is_left_empty(
    world, settings, monkeypatch
):
    linked = []
    real_link = os.link

    def spy(source, target):
        linked.append(Path(target).relative_to(settings.MEDIA_ROOT).as_posix())
        real_link(source, target)

    monkeypatch.setattr(export_services.os, "link", spy)
    snapshot = build(define(world.owner, format="sft"), world.owner)

    stored = {
        p.relative_to(settings.MEDIA_ROOT).as_posix()
        for p in Path(settings.MEDIA_ROOT, "exports").rglob("*")
        if p.is_file()
    }
    assert sorted(linked) == sorted(stored)
    assert f"{snapshot.storage_prefix}/data/train.jsonl" in stored
    scratch = Path(settings.MEDIA_ROOT) / export_services.SCRATCH
    assert scratch.is_dir() and not any(scratch.iterdir())
    # Its scratch name went with the build folder: storage holds the only one.
    assert (snapshot_folder(snapshot) / "data" / "train.jsonl").stat().st_nlink == 1


@pytest.mark.parametrize("refusal", [errno.EXDEV, errno.EPERM, errno.ENOTSUP])
def test_storing_falls_back_to_a_copy_where_a_hard_link_is_refused(world, monkeypatch, refusal):
    """Another disk (EXDEV), or a file system without hard links (EPERM, ENOTSUP)."""

    def cross_device(source, target):
        raise OSError(refusal, os.strerror(refusal))

    monkeypatch.setattr(export_services.os, "link", cross_device)

    snapshot = build(define(world.owner, format="sft"), world.owner)

    assert all_rows(snapshot)
    assert (snapshot_folder(snapshot) / "manifest.json").exists()


def tarfile_reference(folder: Path, top: str, files: list[Path], mtime: int) -> bytes:
    """The uncompressed tar that Python's tarfile writes for the same members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix()):
            with path.open("rb") as fh:
                tar.addfile(tar_info(folder, top, path, mtime), fh)
    return buffer.getvalue()


def dataset_with_parts(tmp_path: Path, monkeypatch) -> tuple[Path, list[Path], dict]:
    folder = tmp_path / "dataset"
    monkeypatch.setattr("exports.writer.ROW_GROUP_ROWS", 2)
    with ThreadPoolExecutor(max_workers=1) as pool:
        writer = SplitWriter(folder, "train", SCHEMA, pool, tmp_path / "parts")
        for row in AWKWARD * 2:
            writer.write(row)
        files = writer.close()
    (folder / "README.md").write_text("# A card\n" + "x" * 700, encoding="utf-8")
    (folder / "manifest.json").write_text("{}", encoding="utf-8")
    files += [folder / "README.md", folder / "manifest.json"]
    return folder, files, {writer.jsonl_path: writer.archive_part}


def test_the_archive_decompresses_to_exactly_the_tar_that_tarfile_writes(tmp_path, monkeypatch):
    folder, files, parts = dataset_with_parts(tmp_path, monkeypatch)
    archive = tmp_path / "snapshot.tar.gz"

    write_archive(archive, folder, "snapshot-9", files, 1_700_000_000, parts)

    expected = tarfile_reference(folder, "snapshot-9", files, 1_700_000_000)
    assert gzip.decompress(archive.read_bytes()) == expected
    # The JSON lines' member was made during the build and copied as it was.
    part = next(iter(parts.values()))
    assert part.path.read_bytes() in archive.read_bytes()


def test_gnu_tar_and_gzip_read_the_archive(tmp_path, monkeypatch):
    folder, files, parts = dataset_with_parts(tmp_path, monkeypatch)
    archive = tmp_path / "snapshot.tar.gz"
    write_archive(archive, folder, "snapshot-9", files, 1_700_000_000, parts)

    subprocess.run(["gzip", "--test", str(archive)], check=True)
    listed = subprocess.run(
        ["tar", "--list", "--gzip", "--file", str(archive)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert listed == [
        "snapshot-9/README.md",
        "snapshot-9/data/train.jsonl",
        "snapshot-9/data/train.parquet",
        "snapshot-9/manifest.json",
    ]
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(out)], check=True)
    for path in files:
        assert (out / "snapshot-9" / path.relative_to(folder)).read_bytes() == path.read_bytes()


def test_a_part_that_no_longer_matches_its_file_is_not_used(tmp_path, monkeypatch):
    folder, files, parts = dataset_with_parts(tmp_path, monkeypatch)
    jsonl = next(iter(parts))
    with jsonl.open("ab") as fh:
        fh.write(b'{"late": true}\n')
    archive = tmp_path / "snapshot.tar.gz"

    write_archive(archive, folder, "top", files, 0, parts)

    assert gzip.decompress(archive.read_bytes()) == tarfile_reference(folder, "top", files, 0)


def test_stored_files_get_the_permissions_storage_gives_its_files(world, settings):
    settings.FILE_UPLOAD_PERMISSIONS = 0o640

    snapshot = build(define(world.owner, format="sft"), world.owner)

    folder = snapshot_folder(snapshot)
    for path in [*folder.rglob("*.jsonl"), folder / "manifest.json"]:
        assert path.stat().st_mode & 0o777 == 0o640


def test_the_manifest_hashes_made_while_writing_are_the_files_hashes(world, monkeypatch):
    monkeypatch.setattr("exports.writer.ROW_GROUP_ROWS", 2)  # many batches a split

    snapshot = build(define(world.owner, format="critique"), world.owner)

    folder = snapshot_folder(snapshot)
    files = snapshot.manifest["files"]
    assert {"data/train.jsonl", "data/test.jsonl"} <= set(files)
    for name, entry in files.items():
        data = (folder / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def test_a_build_uploads_to_storage_that_has_no_local_path(world, settings):
    """Remote storage (here Django's in-memory one, which has no path()): the build
    is made in the system's temporary folder and every file is uploaded."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    from django.core.files.storage import default_storage

    snapshot = build(define(world.owner, format="sft"), world.owner)

    assert not Path(settings.MEDIA_ROOT, snapshot.archive_name).exists(), "nothing on disk"
    with default_storage.open(snapshot.archive_name, "rb") as fh:
        archive = fh.read()
    assert hashlib.sha256(archive).hexdigest() == snapshot.archive_sha256
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = tar.getnames()
    for name in snapshot.manifest["files"]:
        stored = f"{snapshot.storage_prefix}/{name}"
        assert default_storage.exists(stored), stored
        assert f"{snapshot.storage_prefix.rsplit('/', 1)[-1]}/{name}" in members
