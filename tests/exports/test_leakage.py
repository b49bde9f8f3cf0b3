"""Nothing hidden leaves through an export: every byte of every snapshot file, of
the tar.gz (decompressed) and of the Parquet data (decompressed) is searched for
the hidden files' content, the reference outputs and the submitters' identities."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.files.storage import default_storage

from reviews.models import ReviewAssignment
from tests.exports.conftest import (
    EXPERT,
    HIDDEN_TESTS,
    LABEL,
    REFERENCE,
    RUN,
    SECRETS,
    SUBMITTER,
    all_rows,
    archive_members,
    build,
    define,
    graded,
    review,
    snapshot_folder,
    solution,
)

FORMATS = ["sft", "preference", "rl", "critique"]
IDENTITIES = (SUBMITTER, RUN, LABEL)


def parquet_views(data: bytes) -> Iterator[bytes]:
    """A Parquet file's values, decompressed: every column as JSON, and the whole
    table rewritten without compression; plus its footer's key-value metadata."""
    table = pq.read_table(io.BytesIO(data))
    yield json.dumps(table.to_pylist(), ensure_ascii=False).encode()
    plain = io.BytesIO()
    pq.write_table(table, plain, compression="none")
    yield plain.getvalue()
    metadata = pq.read_metadata(io.BytesIO(data)).metadata or {}
    yield b"".join(k + v for k, v in metadata.items())


def every_byte(snapshot) -> Iterator[tuple[str, bytes]]:
    folder = snapshot_folder(snapshot)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    assert files, "the snapshot has files"
    for path in files:
        data = path.read_bytes()
        yield str(path), data
        if path.suffix == ".parquet":
            for view in parquet_views(data):
                yield f"{path} (decompressed)", view
    with default_storage.open(snapshot.archive_name, "rb") as fh:
        archive = fh.read()
    yield "archive", archive
    yield "archive (gunzipped)", gzip.decompress(archive)
    for name, data in archive_members(archive).items():
        yield name, data
        if name.endswith(".parquet"):
            for view in parquet_views(data):
                yield f"{name} (decompressed)", view


def leaks(snapshot, needles) -> list[str]:
    found = []
    for where, data in every_byte(snapshot):
        for needle in needles:
            if needle.encode() in data:
                found.append(f"{needle} in {where}")
    return found


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_exported_byte_holds_a_hidden_file_reference_output_or_submitter(world, fmt):
    snapshot = build(define(world.owner, format=fmt), world.owner)

    assert sum(snapshot.manifest["rows"].values()) > 0
    assert leaks(snapshot, SECRETS + IDENTITIES) == []
    # The search sees through compression: the statement, which every row has, is found.
    assert any(
        b"Compute **relu**" in data
        for where, data in every_byte(snapshot)
        if "decompressed" in where
    )


def test_a_submission_that_copies_a_hidden_file_is_withheld(world):
    task = world.tasks[0]
    copied = graded(task.current_version, world.submitter, {"solution.py": EXPERT})

    snapshot = build(define(world.owner, format="sft"), world.owner)

    assert copied.pk not in {row["submission_id"] for row in all_rows(snapshot)}
    assert snapshot.manifest["skipped"]["hidden_content"] == 1
    assert leaks(snapshot, SECRETS) == []


def test_a_submission_that_pastes_the_hidden_tests_is_withheld(world):
    task = world.tasks[2]
    code = solution(7).replace("class ModelNew", HIDDEN_TESTS + "\n\nclass ModelNew")
    pasted = graded(task.current_version, world.submitter, {"solution.py": code})

    snapshot = build(define(world.owner, format="sft"), world.owner)

    assert pasted.pk not in {row["submission_id"] for row in all_rows(snapshot)}
    (left_out,) = snapshot.left_out.filter(reason="hidden_content")
    assert (left_out.submission_id, left_out.detail["hidden_path"]) == (pasted.pk, "tests/cases.py")
    assert leaks(snapshot, SECRETS) == []


def test_a_review_that_quotes_a_hidden_file_is_withheld(world):
    task = world.tasks[1]
    submission = graded(task.current_version, world.submitter, {"solution.py": "y = 2\n"})
    quote = "\n".join(REFERENCE.splitlines()[8:16])  # the reference's forward and inputs
    assert "expected_scale" in quote
    review(world.reviewers[0], submission, feedback=f"The reference does:\n{quote}\nso should you.")

    snapshot = build(define(world.owner, format="critique"), world.owner)

    assert submission.pk not in {row["submission_id"] for row in all_rows(snapshot)}
    assert snapshot.manifest["skipped"]["hidden_content"] == 1
    (left_out,) = snapshot.left_out.filter(reason="hidden_content")
    assert left_out.submission_id == submission.pk
    assert left_out.detail["part"] == "review 1"
    assert left_out.detail["hidden_path"] == "reference.py"
    assert left_out.detail["hidden_lines"] == [11, 16]
    assert leaks(snapshot, ["expected_scale"]) == []
    assert ReviewAssignment.objects.filter(submission=submission, status="submitted").exists()


def test_identities_are_written_only_when_asked_for_and_built_by_an_admin(world, admin_user):
    definition = define(world.owner, slug="with-who", format="sft", include_submitter=True)

    by_owner = build(definition, world.owner)
    by_admin = build(definition, admin_user)

    assert not by_owner.includes_submitter
    assert leaks(by_owner, IDENTITIES) == []
    assert "submitter" not in all_rows(by_owner)[0]
    assert by_admin.includes_submitter and by_admin.manifest["includes_submitter"]
    row = all_rows(by_admin)[0]
    assert (row["submitter"], row["run_id"]) == (SUBMITTER, RUN)
    assert json.loads(row["labels"]) == {"team": LABEL}
    schema = pq.read_schema(snapshot_folder(by_admin) / "data" / "train.parquet")
    assert schema.field("submitter").type == pa.string()
