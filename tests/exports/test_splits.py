"""Splits are by task and reproducible: no task (so no task version) is in two
splits, and the same definition over the same data gives byte-identical files."""

from __future__ import annotations

import hashlib

import pytest

from exports.splits import split_of
from tests.exports.conftest import (
    SEED,
    SPLIT,
    TASK_SLUGS,
    archive_members,
    build,
    define,
    graded,
    republish,
    rows_of,
    snapshot_folder,
    solution,
)

FORMATS = ["sft", "preference", "rl", "critique"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_task_version_appears_in_two_splits(world, fmt):
    snapshot = build(define(world.owner, format=fmt), world.owner)

    versions = {}
    tasks = {}
    for split in ("train", "validation", "test"):
        rows = rows_of(snapshot, split)
        assert rows, f"{split} has rows"
        versions[split] = {r["task_version_id"] for r in rows}
        tasks[split] = {r["task"] for r in rows}
    assert not versions["train"] & versions["validation"]
    assert not versions["train"] & versions["test"]
    assert not versions["validation"] & versions["test"]
    assert not tasks["train"] & tasks["validation"] and not tasks["validation"] & tasks["test"]
    assert snapshot.manifest["tasks"] == {"train": 4, "validation": 1, "test": 1}


def test_every_version_of_a_task_lands_in_the_tasks_split(world):
    task = world.tasks[0]
    second = republish(task, "Compute **relu**, now for bf16 too.")
    graded(second, world.submitter, {"solution.py": solution(40)})

    snapshot = build(define(world.owner, format="sft"), world.owner)

    where = {
        (row["task_version"], split)
        for split in ("train", "validation", "test")
        for row in rows_of(snapshot, split)
        if row["task"] == task.slug
    }
    assert {number for number, _ in where} == {1, 2}
    assert len({split for _, split in where}) == 1


def test_a_tasks_split_depends_on_the_seed_not_on_the_other_tasks():
    assignments = {
        seed: tuple(split_of(s, seed=seed, ratios=SPLIT) for s in TASK_SLUGS) for seed in range(10)
    }

    assert len(set(assignments.values())) > 1, "another seed, another assignment"
    # Adding tasks never moves an existing one.
    more = [*TASK_SLUGS, "new-task-1", "new-task-2"]
    assert (
        tuple(split_of(s, seed=SEED, ratios=SPLIT) for s in more[: len(TASK_SLUGS)])
        == (assignments[SEED])
    )


def test_a_split_with_ratio_zero_gets_no_task():
    ratios = {"train": 0.9, "validation": 0.0, "test": 0.1}

    splits = {split_of(f"task-{i}", seed=1, ratios=ratios) for i in range(200)}

    assert splits == {"train", "test"}


def _digests(snapshot):
    folder = snapshot_folder(snapshot)
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != "manifest.json"
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_builds_of_the_same_definition_are_byte_identical(world, fmt):
    definition = define(world.owner, format=fmt)

    first, second = build(definition, world.owner), build(definition, world.owner)

    assert first.pk != second.pk
    assert _digests(first) == _digests(second)
    assert {"README.md", "data/train.jsonl", "data/train.parquet"} <= set(_digests(first))
    # The manifest differs only in when and which snapshot; its hashes are the files'.
    assert first.manifest["files"] == second.manifest["files"]
    for name, entry in first.manifest["files"].items():
        assert entry["sha256"] == _digests(first)[name]
    members = [archive_members(open_archive(s)) for s in (first, second)]
    strip = [{k.split("/", 1)[1]: v for k, v in m.items()} for m in members]
    assert {k: v for k, v in strip[0].items() if k != "manifest.json"} == {
        k: v for k, v in strip[1].items() if k != "manifest.json"
    }


def test_another_seed_moves_tasks_between_splits(world):
    one = build(define(world.owner, slug="seed-a", seed=SEED), world.owner)
    other = build(define(world.owner, slug="seed-b", seed=2), world.owner)

    def tasks_by_split(snapshot):
        return {s: sorted({r["task"] for r in rows_of(snapshot, s)}) for s in ("train", "test")}

    assert tasks_by_split(one) != tasks_by_split(other)


def open_archive(snapshot) -> bytes:
    from django.core.files.storage import default_storage

    with default_storage.open(snapshot.archive_name, "rb") as fh:
        return fh.read()
