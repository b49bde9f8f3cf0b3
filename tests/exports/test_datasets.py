"""Hugging Face ``datasets`` reads a snapshot as it is: the folder of a downloaded
tar.gz, through the card's ``configs`` block, every split, every format."""

from __future__ import annotations

import json
import tarfile

import pytest
import yaml
from django.core.files.storage import default_storage

from tests.exports.conftest import build, define, rows_of

FORMATS = ["sft", "preference", "rl", "critique"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """Nothing from any hub: the data is local, and so is the cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


def download(snapshot, into):
    with (
        default_storage.open(snapshot.archive_name, "rb") as fh,
        tarfile.open(fileobj=fh, mode="r:gz") as tar,
    ):
        tar.extractall(into, filter="data")
        (top,) = {name.split("/", 1)[0] for name in tar.getnames()}
    return into / top


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_dataset_reads_a_downloaded_snapshot_folder(world, fmt, tmp_path):
    import datasets

    snapshot = build(define(world.owner, format=fmt), world.owner)
    folder = download(snapshot, tmp_path / "download")

    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))

    assert set(loaded) == {"train", "validation", "test"}
    for split, dataset in loaded.items():
        assert dataset.num_rows == snapshot.manifest["rows"][split]
        assert dataset.to_list() == rows_of(snapshot, split)
    features = loaded["train"].features
    if fmt == "sft":
        assert features["messages"].feature["role"].dtype == "string"
    if fmt == "critique":
        assert features["reviews"].feature["criteria"].feature["points"].dtype == "float64"


def test_the_card_names_each_split_file_and_describes_the_features(world):
    snapshot = build(define(world.owner, format="sft"), world.owner)
    from tests.exports.conftest import snapshot_folder

    text = (snapshot_folder(snapshot) / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    card = yaml.safe_load(header)

    assert card["configs"] == [
        {
            "config_name": "default",
            "data_files": [
                {"split": s, "path": f"data/{s}.parquet"} for s in ("train", "validation", "test")
            ],
        }
    ]
    for split, count in snapshot.manifest["rows"].items():
        assert f"| {split} | {count} |" in body
    assert card["dataset_info"]["features"][0] == {
        "name": "messages",
        "list": [{"name": "role", "dtype": "string"}, {"name": "content", "dtype": "string"}],
    }
    assert "load_dataset" in body and "relu-data" in body


def test_the_manifest_counts_rows_and_hashes_every_file(world):
    import hashlib

    from tests.exports.conftest import snapshot_folder

    snapshot = build(define(world.owner, format="sft"), world.owner)
    folder = snapshot_folder(snapshot)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))

    assert manifest == snapshot.manifest
    assert manifest["platform"]["name"] == "benchwright" and manifest["platform"]["version"]
    assert manifest["exported_at"].endswith("Z")
    assert manifest["definition"]["slug"] == "relu-data"
    assert manifest["definition"]["format"] == "sft"
    assert set(manifest["files"]) == {
        "README.md",
        *(
            f"data/{s}.{ext}"
            for s in ("train", "validation", "test")
            for ext in ("jsonl", "parquet")
        ),
    }
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    for split, count in manifest["rows"].items():
        assert len(rows_of(snapshot, split)) == count


def test_a_split_without_rows_is_left_out_of_files_and_card(world, tmp_path):
    import datasets

    ratios = {"train": 0.8, "validation": 0.0, "test": 0.2}
    snapshot = build(define(world.owner, format="rl", split=ratios), world.owner)
    folder = download(snapshot, tmp_path / "download")

    assert snapshot.manifest["rows"]["validation"] == 0
    assert not (folder / "data" / "validation.parquet").exists()
    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))
    assert set(loaded) == {"train", "test"}
