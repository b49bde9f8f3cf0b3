"""Submitting a JSONL manifest in batches, resumably.

Each manifest line is one submission::

    {"task": "row-softmax", "model": "m-7b", "run_id": "r42", "labels": {"t": "0.2"},
     "files": {"solution.py": "import torch\\n..."}}

``files`` maps file names to their text, or lists paths (relative to the
manifest) whose content is read from disk and sent under their base name.

The manifest is sent in chunks of up to 1,000. Each chunk's Idempotency-Key is
derived from its lines, its index and the chunk size, and a state file beside
the manifest records the chunks the server accepted. Run the same command again
after an interruption: accepted chunks are skipped, and a chunk whose answer was
lost is sent again with the same key, so the server replays its first answer
instead of creating duplicates. (Keys live 24 hours on the server.)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .api import BenchwrightClient, submission_item

MAX_CHUNK = 1000


class ManifestError(ValueError):
    """A manifest line that cannot be turned into a submission; names the line."""


@dataclass
class Chunk:
    index: int
    key: str
    lines: list[int]
    items: list[dict[str, Any]]


@dataclass
class BatchResult:
    submitted: int = 0
    skipped: int = 0
    ids: list[int] = field(default_factory=list)
    run_ids: set[str] = field(default_factory=set)


def _files(value: Any, base: Path, line_no: int) -> dict[str, str]:
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, list) and all(isinstance(p, str) for p in value):
        files = {}
        for name in value:
            path = base / name
            try:
                files[path.name] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ManifestError(f"line {line_no}: cannot read {name}: {exc}") from None
        return files
    raise ManifestError(f"line {line_no}: files must map names to text, or list file paths")


def parse_line(raw: bytes, line_no: int, base: Path) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"line {line_no}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"line {line_no}: expected a JSON object")
    missing = [k for k in ("task", "model", "files") if k not in data]
    if missing:
        raise ManifestError(f"line {line_no}: missing {', '.join(missing)}")
    labels = data.get("labels") or {}
    if not isinstance(labels, dict):
        raise ManifestError(f"line {line_no}: labels must be an object")
    return submission_item(
        task=str(data["task"]),
        model=str(data["model"]),
        files=_files(data["files"], base, line_no),
        run_id=str(data.get("run_id") or ""),
        labels={str(k): str(v) for k, v in labels.items()},
    )


def read_chunks(manifest: Path, chunk_size: int) -> list[Chunk]:
    """The manifest's non-blank lines in chunks, each with its idempotency key."""
    if not 1 <= chunk_size <= MAX_CHUNK:
        raise ManifestError(f"chunk size must be 1 to {MAX_CHUNK}")
    numbered = [
        (n, raw.strip())
        for n, raw in enumerate(manifest.read_bytes().splitlines(), start=1)
        if raw.strip()
    ]
    chunks = []
    for index, start in enumerate(range(0, len(numbered), chunk_size)):
        part = numbered[start : start + chunk_size]
        digest = hashlib.sha256(f"{index}:{chunk_size}\n".encode())
        for _, raw in part:
            digest.update(raw + b"\n")
        chunks.append(
            Chunk(
                index=index,
                key=f"bw-batch-{digest.hexdigest()[:48]}",
                lines=[n for n, _ in part],
                items=[parse_line(raw, n, manifest.parent) for n, raw in part],
            )
        )
    return chunks


class State:
    """Accepted chunks by key, in a JSON file written atomically after each chunk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[str, list[int]] = {}
        if path.exists():
            data = json.loads(path.read_text())
            self.done = {str(k): [int(i) for i in v] for k, v in data.get("done", {}).items()}

    def record(self, key: str, ids: list[int]) -> None:
        self.done[key] = ids
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"version": 1, "done": self.done}, indent=1))
        os.replace(tmp, self.path)


def default_state_path(manifest: Path) -> Path:
    return manifest.with_name(manifest.name + ".state.json")


def submit_manifest(
    client: BenchwrightClient,
    manifest: Path,
    *,
    chunk_size: int = MAX_CHUNK,
    state_path: Path | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> BatchResult:
    """Submit every line of ``manifest``; ``on_chunk(n)`` is told of each chunk's
    size once it is accepted or skipped. Every line is checked before anything is sent."""
    chunks = read_chunks(manifest, chunk_size)
    state = State(state_path or default_state_path(manifest))
    result = BatchResult()
    for chunk in chunks:
        result.run_ids.update(item["run_id"] for item in chunk.items)
        if chunk.key in state.done:
            result.skipped += len(chunk.items)
            result.ids += state.done[chunk.key]
        else:
            answer = client.submit_batch(chunk.items, idempotency_key=chunk.key)
            ids = [int(s["id"]) for s in answer["submissions"]]
            state.record(chunk.key, ids)
            result.submitted += len(ids)
            result.ids += ids
        if on_chunk is not None:
            on_chunk(len(chunk.items))
    return result
