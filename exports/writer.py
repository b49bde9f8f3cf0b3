"""Writing a split as JSONL and Parquet, incrementally, byte-for-byte reproducibly.

Rows go to ``data/<split>.jsonl`` as they come and to ``data/<split>.parquet``
one row group per ``ROW_GROUP_ROWS`` rows, so memory holds at most one row
group per split. Everything that shapes the bytes is fixed here: the column
order (the schema's), JSON separators, the row-group size (by row count, never
by timing or database chunking), the Parquet version, compression and level.
A split without rows gets no files (``datasets`` refuses an empty split).
"""

from __future__ import annotations

import gzip
import hashlib
import math
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 4096
PARQUET_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
}
HASH_BLOCK = 1 << 20


class SplitWriter:
    def __init__(self, folder: Path, split: str, schema: pa.Schema) -> None:
        self.folder = folder
        self.split = split
        self.schema = schema
        self.rows = 0
        self._buffer: list[dict[str, Any]] = []
        self._jsonl: IO[bytes] | None = None
        self._parquet: pq.ParquetWriter | None = None

    @property
    def jsonl_path(self) -> Path:
        return self.folder / "data" / f"{self.split}.jsonl"

    @property
    def parquet_path(self) -> Path:
        return self.folder / "data" / f"{self.split}.parquet"

    def write(self, row: dict[str, Any]) -> None:
        if self._jsonl is None:
            self.jsonl_path.parent.mkdir(parents=True, exist_ok=True)
            self._jsonl = self.jsonl_path.open("wb")
        self._jsonl.write(json_line(row))
        self._buffer.append(row)
        self.rows += 1
        if len(self._buffer) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self.parquet_path, self.schema, **PARQUET_OPTIONS)
        # Column by column: Arrow builds a table from a list per column ten times
        # faster than from a list of row dicts.
        rows = self._buffer
        columns = {name: [row[name] for row in rows] for name in self.schema.names}
        table = pa.Table.from_pydict(columns, schema=self.schema)
        self._parquet.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self._buffer = []

    def close(self) -> list[Path]:
        """Finish both files; returns the files written (none for an empty split)."""
        self._flush()
        if self._parquet is not None:
            self._parquet.close()
        if self._jsonl is not None:
            self._jsonl.close()
        return [self.jsonl_path, self.parquet_path] if self.rows else []


def json_line(row: dict[str, Any]) -> bytes:
    """One compact JSON line, keys in the row's (the schema's) order, UTF-8 as is."""
    return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)


def finite(value: float | None) -> float | None:
    """JSON has no NaN or infinity; such a measurement is as good as none."""
    return value if value is not None and math.isfinite(value) else None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def write_archive(target: Path, folder: Path, top: str, files: Iterable[Path], mtime: int) -> None:
    """A tar.gz of ``files`` (paths under ``folder``) below the directory ``top``:
    sorted names, fixed owner and modes, one timestamp, no gzip name or time."""
    with (
        target.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix()):
            info = tarfile.TarInfo(f"{top}/{path.relative_to(folder).as_posix()}")
            info.size = path.stat().st_size
            info.mtime = mtime
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with path.open("rb") as fh:
                tar.addfile(info, fh)
