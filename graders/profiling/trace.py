"""Profiler traces, loaded into numpy columns so that analyses run vectorised.

A ``Trace`` is one profiled process (one rank). Three producers are read:

* PyTorch's profiler (Kineto), ``export_chrome_trace`` or the TensorBoard
  handler: a Chrome-trace JSON object with ``traceEvents`` and the Kineto keys
  ``schemaVersion``, ``deviceProperties``, ``distributedInfo``,
  ``baseTimeNanoseconds``. Events carry a ``cat`` (``cpu_op``, ``kernel``, ...).
* The JAX profiler's Perfetto/Chrome-trace export: no ``cat``; its lanes are
  named by ``M`` metadata events (``process_name`` ``/device:GPU:0``,
  ``thread_name`` ``Stream #13(...)``), and what an event is follows from its
  lane (see ``_classify_by_lane``).
* An Nsight Systems SQLite export (``nsys export --type sqlite``), read with
  ``load_nsys_sqlite``.

JSON may be gzip-compressed (recognised by its magic bytes). Only complete
events (``ph: "X"``) become rows; metadata events name the lanes and the rest
(flows, instants, counters) are kept for display only.

Evidence ids let a grader check that the events an answer cites exist:

* ``ev:<i>``: the event at position ``i`` of ``traceEvents`` (for an Nsight
  export: of the rows in the order ``load_nsys_sqlite`` documents);
* ``corr:<n>``: every event whose ``args.correlation`` is ``n``; a runtime call
  and the kernel or copy it launched share one;
* ``ext:<n>``: every event whose ``args["External id"]`` is ``n`` (an operator,
  its runtime calls and their kernels).

Only the standard library, numpy and orjson are imported: task authors' key
scripts import this module inside the grading sandbox.
"""

from __future__ import annotations

import gc
import gzip
import re
import sqlite3
import zlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from typing import Any

import numpy as np
import orjson

DEFAULT_MAX_EVENTS = 5_000_000
"""More ``traceEvents`` than this are refused: a bigger trace does not fit the
grader's memory budget (about 200 bytes of columns per event, plus the text)."""

CHUNK_BYTES = 4 << 20
"""The events array is parsed this many bytes at a time, so that only one
slice of events exists as Python objects at once."""

GZIP_MAGIC = b"\x1f\x8b"
STEP_NAME = re.compile(r"ProfilerStep\s*#\s*(\d+)")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_COPY_NAME = re.compile(
    r"Memcpy\s*(HtoD|DtoH|DtoD|HtoH|PtoP|H2D|D2H|D2D|H2H|P2P)(?:\s*\((\w+)\s*->\s*(\w+)\))?"
)
_KINETO_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds")
_EMPTY_ARGS: dict[str, Any] = {}


class TraceError(ValueError):
    """The input is not a trace this module can read; the message says where."""


_EVENT_ID = re.compile(r"(ev|corr|ext):(0|[1-9][0-9]{0,18})", re.ASCII)


class EventKind(IntEnum):
    """What an event is, whatever the producer called it."""

    OTHER = 0
    CPU_OP = 1
    USER_ANNOTATION = 2
    GPU_ANNOTATION = 3
    PYTHON_FUNCTION = 4
    CUDA_RUNTIME = 5
    CUDA_DRIVER = 6
    KERNEL = 7
    COMM_KERNEL = 8
    MEMCPY = 9
    MEMSET = 10
    CUDA_SYNC = 11


GPU_ACTIVITY = (EventKind.KERNEL, EventKind.COMM_KERNEL, EventKind.MEMCPY, EventKind.MEMSET)
"""Kinds that occupy a GPU; the GPU is idle when none of them runs."""

HOST_CALLS = (EventKind.CUDA_RUNTIME, EventKind.CUDA_DRIVER)

_KINETO_CATEGORIES = {
    "cpu_op": EventKind.CPU_OP,
    "operator": EventKind.CPU_OP,
    "user_annotation": EventKind.USER_ANNOTATION,
    "gpu_user_annotation": EventKind.GPU_ANNOTATION,
    "python_function": EventKind.PYTHON_FUNCTION,
    "cuda_runtime": EventKind.CUDA_RUNTIME,
    "runtime": EventKind.CUDA_RUNTIME,
    "cuda_driver": EventKind.CUDA_DRIVER,
    "kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.MEMCPY,
    "memcpy": EventKind.MEMCPY,
    "gpu_memset": EventKind.MEMSET,
    "memset": EventKind.MEMSET,
    "cuda_sync": EventKind.CUDA_SYNC,
}


class CopyKind(IntEnum):
    """Direction of a memory copy, as in Kineto's ``Memcpy DtoH (...)`` names."""

    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    DTOD = 3
    HTOH = 4
    PTOP = 5


COPY_KIND_LABELS = {
    CopyKind.UNKNOWN: "unknown",
    CopyKind.HTOD: "HtoD",
    CopyKind.DTOH: "DtoH",
    CopyKind.DTOD: "DtoD",
    CopyKind.HTOH: "HtoH",
    CopyKind.PTOP: "PtoP",
}


class HostMemory(IntEnum):
    """Which memory the host side of a copy used: pageable copies block the host."""

    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    DEVICE = 3
    MANAGED = 4


HOST_MEMORY_LABELS = {
    HostMemory.UNKNOWN: "unknown",
    HostMemory.PAGEABLE: "pageable",
    HostMemory.PINNED: "pinned",
    HostMemory.DEVICE: "device",
    HostMemory.MANAGED: "managed",
}


class CallKind(IntEnum):
    """What a CUDA runtime or driver call does, from its name."""

    OTHER = 0
    LAUNCH = 1
    SYNC = 2


LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaGraphLaunch",
        "cudaMemcpyAsync",
        "cudaMemcpy2DAsync",
        "cudaMemcpy3DAsync",
        "cudaMemsetAsync",
        "cudaMemset2DAsync",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuMemcpyAsync",
        "cuMemcpyHtoDAsync",
        "cuMemcpyDtoHAsync",
        "cuMemcpyDtoDAsync",
        "cuMemsetD8Async",
        "cuMemsetD32Async",
    }
)
"""Calls that enqueue GPU work and return without waiting for it."""

SYNC_CALLS = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpy2D",
        "cudaMemcpy3D",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "cuEventSynchronize",
        "cuMemcpy",
        "cuMemcpyDtoH",
        "cuMemcpyHtoD",
    }
)
"""Calls that block the host until GPU work has finished."""


@dataclass(frozen=True)
class Step:
    """One ``ProfilerStep#N`` annotation: a training iteration on the CPU."""

    number: int
    ts_us: float
    dur_us: float
    row: int

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us


@dataclass(eq=False)
class Trace:
    """The complete events of one trace, one numpy array per field.

    Row ``r`` is one complete event; ``index[r]`` is its position in
    ``traceEvents``. Integer fields hold -1 where the event has no such value.
    Times are microseconds on the trace's own clock.
    """

    source: str
    name: str
    rank: int
    world_size: int
    metadata: dict[str, Any]
    names: list[str]
    event_count: int
    integral_timestamps: bool
    index: np.ndarray
    ts_us: np.ndarray
    dur_us: np.ndarray
    kind: np.ndarray
    name_id: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    stream: np.ndarray
    device: np.ndarray
    correlation: np.ndarray
    external_id: np.ndarray
    nbytes: np.ndarray
    copy_kind: np.ndarray
    host_memory: np.ndarray
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    lane_labels: dict[int, str] = field(default_factory=dict)
    raw: _RawEvents | None = None

    def __len__(self) -> int:
        return len(self.index)

    def __repr__(self) -> str:
        return (
            f"Trace({self.source}, {self.name!r}, rank {self.rank}/{self.world_size}, "
            f"{self.event_count} events, {len(self)} complete)"
        )

    @cached_property
    def end_us(self) -> np.ndarray:
        return self.ts_us + self.dur_us

    @cached_property
    def call_kind(self) -> np.ndarray:
        """Per row: ``CallKind`` of a runtime or driver call, ``OTHER`` for the rest."""
        by_name = np.array(
            [
                CallKind.LAUNCH if n in LAUNCH_CALLS else CallKind.SYNC if n in SYNC_CALLS else 0
                for n in self.names
            ]
            or [0],
            dtype=np.int8,
        )
        kinds = by_name[self.name_id]
        return np.where(np.isin(self.kind, HOST_CALLS), kinds, CallKind.OTHER).astype(np.int8)

    @cached_property
    def is_gpu(self) -> np.ndarray:
        """Per row: whether the event occupies a GPU (kernel, copy or memset)."""
        return np.isin(self.kind, GPU_ACTIVITY)

    @cached_property
    def launch_row(self) -> np.ndarray:
        """Per row: the row of the runtime or driver call that launched this GPU
        event (same correlation), or -1 for CPU events and GPU events with none."""
        result = np.full(len(self), -1, dtype=np.int64)
        calls = np.flatnonzero(np.isin(self.kind, HOST_CALLS) & (self.correlation >= 0))
        gpu = np.flatnonzero(self.is_gpu & (self.correlation >= 0))
        if len(calls) == 0 or len(gpu) == 0:
            return result
        order = calls[np.argsort(self.correlation[calls], kind="stable")]
        keys = self.correlation[order]
        at = np.searchsorted(keys, self.correlation[gpu])
        inside = at < len(keys)
        found = np.zeros(len(gpu), dtype=bool)
        found[inside] = keys[at[inside]] == self.correlation[gpu[inside]]
        result[gpu[found]] = order[at[found]]
        return result

    @cached_property
    def steps(self) -> list[Step]:
        """The ``ProfilerStep#N`` annotations on the CPU, in time order (the first
        one of each number when a number repeats)."""
        numbers = {
            i: int(m.group(1)) for i, n in enumerate(self.names) if (m := STEP_NAME.fullmatch(n))
        }
        if not numbers:
            return []
        on_cpu = np.isin(self.kind, (EventKind.USER_ANNOTATION, EventKind.CPU_OP))
        rows = np.flatnonzero(on_cpu & np.isin(self.name_id, list(numbers)))
        rows = rows[np.argsort(self.ts_us[rows], kind="stable")]
        steps: dict[int, Step] = {}
        for row in rows.tolist():
            number = numbers[int(self.name_id[row])]
            if number not in steps:
                steps[number] = Step(number, float(self.ts_us[row]), float(self.dur_us[row]), row)
        return sorted(steps.values(), key=lambda s: s.ts_us)

    @cached_property
    def row_step(self) -> np.ndarray:
        """Per row: the number of the step the event belongs to, or -1.

        A CPU event belongs to the step whose annotation contains its start.
        A GPU event belongs to the step of the call that launched it (same
        correlation); one without a launch call belongs to the step whose CPU
        span contains its own start.
        """
        result = np.full(len(self), -1, dtype=np.int64)
        steps = self.steps
        if not steps:
            return result
        starts = np.array([s.ts_us for s in steps])
        ends = np.array([s.end_us for s in steps])
        numbers = np.array([s.number for s in steps])
        at = np.searchsorted(starts, self.ts_us, side="right") - 1
        valid = at >= 0
        valid[valid] = self.ts_us[valid] < ends[at[valid]]
        result[valid] = numbers[at[valid]]
        launched = np.flatnonzero(self.launch_row >= 0)
        result[launched] = result[self.launch_row[launched]]
        return result

    def label(self, row: int) -> str:
        """The event name of a row."""
        return self.names[int(self.name_id[row])]

    def lane_name(self, pid: int, tid: int) -> str:
        """The lane's name from the metadata events, or ``pid/tid`` without one."""
        thread = self.thread_names.get((pid, tid))
        process = self.process_names.get(pid, self.lane_labels.get(pid, str(pid)))
        return f"{process} / {thread or self.lane_labels.get(tid, str(tid))}"

    def event(self, index: int) -> dict[str, Any]:
        """The event at ``index`` of ``traceEvents`` as the producer wrote it."""
        if not 0 <= index < self.event_count:
            raise IndexError(f"no event {index}: the trace has {self.event_count}")
        if self.raw is not None:
            return self.raw.get(index)
        return self._event_from_columns(index)

    def rows_at(self, indices: Sequence[int]) -> np.ndarray:
        """Rows of the complete events at these ``traceEvents`` positions (others are skipped)."""
        wanted = np.asarray(indices, dtype=np.int64)
        at = np.searchsorted(self.index, wanted)
        inside = at < len(self.index)
        hit = np.zeros(len(wanted), dtype=bool)
        hit[inside] = self.index[at[inside]] == wanted[inside]
        return at[hit]

    def evidence_ids(self, row: int) -> list[str]:
        """Every id that names this row: ``ev:``, and ``corr:``/``ext:`` where it has them."""
        ids = [f"ev:{int(self.index[row])}"]
        if self.correlation[row] >= 0:
            ids.append(f"corr:{int(self.correlation[row])}")
        if self.external_id[row] >= 0:
            ids.append(f"ext:{int(self.external_id[row])}")
        return ids

    def has_event_id(self, event_id: str) -> bool:
        """Whether an evidence id names at least one event of this trace."""
        return bool(self.events_for_id(event_id))

    def events_for_id(self, event_id: str) -> list[int]:
        """The ``traceEvents`` positions an evidence id names (empty if none or malformed)."""
        # One spelling per event: ASCII digits, no sign, no leading zeros, no spaces.
        match = _EVENT_ID.fullmatch(event_id)
        if not match:
            return []
        prefix, number = match.group(1), int(match.group(2))
        if prefix == "ev":
            return [number] if number < self.event_count else []
        keys, order = self._sorted_ids[prefix]
        low, high = np.searchsorted(keys, [number, number + 1])
        return sorted(int(i) for i in self.index[order[low:high]])

    @cached_property
    def _sorted_ids(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        sorted_ids = {}
        for prefix, values in (("corr", self.correlation), ("ext", self.external_id)):
            order = np.argsort(values, kind="stable")
            sorted_ids[prefix] = (values[order], order)
        return sorted_ids

    def _event_from_columns(self, index: int) -> dict[str, Any]:
        """An Nsight row shown as a Chrome-trace event, from the columns."""
        row = int(self.rows_at([index])[0])
        args: dict[str, Any] = {}
        for key, column in (
            ("stream", self.stream),
            ("device", self.device),
            ("correlation", self.correlation),
            ("bytes", self.nbytes),
        ):
            if column[row] >= 0:
                args[key] = int(column[row])
        return {
            "ph": "X",
            "cat": EventKind(int(self.kind[row])).name.lower(),
            "name": self.label(row),
            "pid": int(self.pid[row]),
            "tid": int(self.tid[row]),
            "ts": float(self.ts_us[row]),
            "dur": float(self.dur_us[row]),
            "args": args,
        }


class _RawEvents:
    """Gives back one event as the producer wrote it."""

    def get(self, index: int) -> dict[str, Any]:
        raise NotImplementedError


class _ListEvents(_RawEvents):
    def __init__(self, events: list[Any]) -> None:
        self.events = events

    def get(self, index: int) -> dict[str, Any]:
        event = self.events[index]
        return dict(event) if isinstance(event, dict) else {"value": event}


class _ChunkedEvents(_RawEvents):
    """Keeps the JSON text and where each parsed slice of events lies in it;
    showing an event parses its slice again (a few MB) rather than keeping
    every event as Python objects, which would need several times the memory."""

    def __init__(self, data: bytes, chunks: list[tuple[int, int, int]]) -> None:
        self.data = data
        self.chunks = chunks
        self.firsts = [first for first, _, _ in chunks]
        self._cached: tuple[int, list[Any]] | None = None

    def get(self, index: int) -> dict[str, Any]:
        at = bisect_right(self.firsts, index) - 1
        if self._cached is None or self._cached[0] != at:
            _, start, end = self.chunks[at]
            self._cached = (at, orjson.loads(b"[" + self.data[start:end] + b"]"))
        return dict(self._cached[1][index - self.firsts[at]])


def load_trace(data: bytes, *, name: str = "", max_events: int = DEFAULT_MAX_EVENTS) -> Trace:
    """Read a Chrome-trace JSON document (Kineto or JAX), gzip-compressed or not.

    Raises ``TraceError`` naming what is wrong: not gzip, not JSON, no
    ``traceEvents`` list, an event field of the wrong type, more than
    ``max_events`` events.
    """
    text = _decompress(data)
    raw: _RawEvents
    # Parsing allocates millions of dicts, none of them in a reference cycle;
    # the cyclic garbage collector would scan them again and again (10-20 % of
    # the load time of a 1M-event trace), so it is paused meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            header, columns, chunks = _load_in_slices(text, max_events)
            raw = _ChunkedEvents(text, chunks)
        except _NotSplittable:
            header, events = _parse_whole(text)
            columns = _Columns(max_events)
            for first in range(0, len(events), 50_000):
                columns.add(events[first : first + 50_000], first)
            raw = _ListEvents(events)
        return columns.finish(header, name=name, raw=raw)
    finally:
        if collecting:
            gc.enable()


def _decompress(data: bytes) -> bytes:
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"not a readable gzip file: {exc}") from exc


def _parse_whole(text: bytes) -> tuple[dict[str, Any], list[Any]]:
    """The general path: parse the document at once (Chrome's bare-array form
    included). Malformed JSON is reported from here."""
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"not JSON: {exc}") from exc
    if isinstance(document, list):
        return {}, document
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise TraceError("not a Chrome trace: no traceEvents list")
    events = document.pop("traceEvents")
    return document, events


class _NotSplittable(Exception):
    """The sliced path met a layout it cannot cut; the document is parsed whole."""


def _load_in_slices(
    text: bytes, max_events: int
) -> tuple[dict[str, Any], _Columns, list[tuple[int, int, int]]]:
    """Parse the top-level ``traceEvents`` array a few MB at a time.

    Parsing a 1M-event trace at once makes about 1.5 GB of Python objects;
    slice by slice, only the columns and one slice exist at a time. Slices
    are cut where one event ends and the next begins (``}`` , ``{``). A cut
    that falls inside a string or past the array leaves a slice that does not
    parse, and the slice is extended to the next cut. The last slice runs to
    the array's closing bracket, which orjson finds: parsing ``[`` + the rest
    of the document stops right after it with "unexpected content".

    Returns the document without its events, the columns, and for each slice
    (its first event's position, start byte, end byte).
    """
    found = _EVENTS_KEY.search(text)
    if found is None or not _is_top_level_key(text, found.start()):
        raise _NotSplittable
    columns = _Columns(max_events)
    chunks = []
    start, first = found.end(), 0
    while True:
        cut = _EVENT_BOUNDARY.search(text, start + CHUNK_BYTES)
        events = None
        while cut is not None and events is None:
            try:
                events = orjson.loads(b"[" + text[start : cut.start() + 1] + b"]")
            except orjson.JSONDecodeError:
                cut = _EVENT_BOUNDARY.search(text, cut.end())
        if cut is None or events is None:
            end, events = _last_slice(text, start)
        else:
            end = cut.start() + 1
        columns.add(events, first)
        chunks.append((first, start, end))
        first += len(events)
        if cut is None:
            break
        start = cut.end() - 1
    try:
        header = orjson.loads(text[: found.end() - 1] + b"[]" + text[end + 1 :])
    except orjson.JSONDecodeError as exc:
        raise _NotSplittable from exc
    if not isinstance(header, dict) or header.pop("traceEvents", None) != []:
        raise _NotSplittable
    return header, columns, chunks


def _is_top_level_key(text: bytes, key_start: int) -> bool:
    """Whether the key at ``key_start`` belongs to the outermost object: only then
    does the text before it, closed by one more member and ``}``, parse."""
    try:
        return isinstance(orjson.loads(text[:key_start] + b'"":0}'), dict)
    except orjson.JSONDecodeError:
        return False


def _last_slice(text: bytes, start: int) -> tuple[int, list[Any]]:
    """The events from ``start`` to the array's ``]``, and that bracket's position.

    orjson reports the first character after the array as a position in the
    decoded text (characters, not bytes); the text before it, encoded again,
    gives the byte offset. The ``]`` is the last one before that point."""
    try:
        orjson.loads(b"[" + text[start:])
    except orjson.JSONDecodeError as exc:
        if not exc.msg.startswith("unexpected content after document"):
            raise _NotSplittable from exc
        after = len(exc.doc[: exc.pos].encode())  # in b"[" + text[start:]
        close = text.rfind(b"]", start, start + after - 1)
        if close < 0:
            raise _NotSplittable from exc
        try:
            return close, orjson.loads(b"[" + text[start:close] + b"]")
        except orjson.JSONDecodeError:
            raise _NotSplittable from exc
    raise _NotSplittable


def load_nsys_sqlite(path: str, *, name: str = "", max_events: int = DEFAULT_MAX_EVENTS) -> Trace:
    """Read an Nsight Systems SQLite export.

    Rows come from ``CUPTI_ACTIVITY_KIND_KERNEL``, ``..._MEMCPY``,
    ``..._MEMSET``, ``..._RUNTIME`` and ``NVTX_EVENTS`` (ranges only), in
    that order, each table by start time; ``ev:<i>`` is a position in that
    order. Times are converted from nanoseconds to microseconds. GPU rows
    use the device as pid and the stream as tid, as Kineto does. Runtime
    names lose nsys's version suffix (``cudaLaunchKernel_v7000``). An NVTX
    range named ``ProfilerStep#N`` marks a step.
    """
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TraceError(f"not an Nsight Systems SQLite export: {exc}") from exc
    try:
        return _read_nsys(connection, name=name or path, max_events=max_events)
    except sqlite3.DatabaseError as exc:
        raise TraceError(f"not an Nsight Systems SQLite export: {exc}") from exc
    finally:
        connection.close()


_NSYS_COPY_KINDS = {
    1: CopyKind.HTOD,
    2: CopyKind.DTOH,
    8: CopyKind.DTOD,
    9: CopyKind.HTOH,
    10: CopyKind.PTOP,
}
_NSYS_MEMORY = {1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed"}


def _read_nsys(connection: sqlite3.Connection, *, name: str, max_events: int) -> Trace:
    tables = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    if "StringIds" not in tables:
        raise TraceError("not an Nsight Systems SQLite export: no StringIds table")
    strings = dict(connection.execute("SELECT id, value FROM StringIds"))
    rows: list[tuple[Any, ...]] = []

    def columns_of(table: str) -> set[str]:
        return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}

    kernel_table = "CUPTI_ACTIVITY_KIND_KERNEL"
    if kernel_table in tables:
        name_column = (
            "demangledName" if "demangledName" in columns_of(kernel_table) else "shortName"
        )
        query = (
            f"SELECT start, end, deviceId, streamId, correlationId, {name_column} "  # noqa: S608
            f"FROM {kernel_table} ORDER BY start"
        )
        for start, end, device, stream, corr, name_id in connection.execute(query):
            label = str(strings.get(name_id, name_id))
            kind = EventKind.COMM_KERNEL if "nccl" in label.lower() else EventKind.KERNEL
            rows.append((kind, label, start, end, device, stream, device, stream, corr, -1))
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        query = (
            "SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind, srcKind, "
            "dstKind "
            "FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start"
        )
        for start, end, device, stream, corr, nbytes, copy, src, dst in connection.execute(query):
            label = _nsys_copy_name(copy, src, dst)
            rows.append(
                (EventKind.MEMCPY, label, start, end, device, stream, device, stream, corr, nbytes)
            )
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        query = (
            "SELECT start, end, deviceId, streamId, correlationId, bytes "
            "FROM CUPTI_ACTIVITY_KIND_MEMSET ORDER BY start"
        )
        for start, end, device, stream, corr, nbytes in connection.execute(query):
            rows.append(
                (
                    EventKind.MEMSET,
                    "Memset (Device)",
                    start,
                    end,
                    device,
                    stream,
                    device,
                    stream,
                    corr,
                    nbytes,
                )
            )
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        query = (
            "SELECT start, end, globalTid, correlationId, nameId "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start"
        )
        for start, end, global_tid, corr, name_id in connection.execute(query):
            label = re.sub(r"_v\d+$", "", str(strings.get(name_id, name_id)))
            pid, tid = _split_global_tid(global_tid)
            rows.append((EventKind.CUDA_RUNTIME, label, start, end, pid, tid, -1, -1, corr, -1))
    if "NVTX_EVENTS" in tables:
        query = (
            "SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS "
            "WHERE end IS NOT NULL ORDER BY start"
        )
        for start, end, text, text_id, global_tid in connection.execute(query):
            label = text if text is not None else str(strings.get(text_id, ""))
            pid, tid = _split_global_tid(global_tid)
            rows.append((EventKind.USER_ANNOTATION, label, start, end, pid, tid, -1, -1, -1, -1))
    if len(rows) > max_events:
        raise TraceError(f"more than {max_events} events ({len(rows)}): over the limit")
    return _nsys_trace(rows, name=name)


def _nsys_copy_name(copy: int | None, src: int | None, dst: int | None) -> str:
    kind = COPY_KIND_LABELS[_NSYS_COPY_KINDS.get(copy or 0, CopyKind.UNKNOWN)]
    source = _NSYS_MEMORY.get(src or 0, "Unknown")
    target = _NSYS_MEMORY.get(dst or 0, "Unknown")
    return f"Memcpy {kind} ({source} -> {target})"


def _split_global_tid(global_tid: int | None) -> tuple[int, int]:
    """nsys packs the process id in bits 24-47 and the thread id in bits 0-23."""
    value = int(global_tid or 0)
    return (value >> 24) & 0xFFFFFF, value & 0xFFFFFF


def _nsys_trace(rows: list[tuple[Any, ...]], *, name: str) -> Trace:
    names: dict[str, int] = {}
    name_ids = [names.setdefault(row[1], len(names)) for row in rows]

    def column(position: int, dtype: Any) -> np.ndarray:
        return np.array(
            [-1 if row[position] is None else row[position] for row in rows], dtype=dtype
        )

    start = column(2, np.int64)
    end = column(3, np.int64)
    kinds = np.array([int(row[0]) for row in rows], dtype=np.int8)
    copy_kind, host_memory = _copy_columns(list(names), np.array(name_ids, dtype=np.int32), kinds)
    return Trace(
        source="nsys",
        name=name,
        rank=0,
        world_size=1,
        metadata={},
        names=list(names),
        event_count=len(rows),
        integral_timestamps=False,
        index=np.arange(len(rows), dtype=np.int64),
        ts_us=start / 1000.0,
        dur_us=np.maximum(end - start, 0) / 1000.0,
        kind=kinds,
        name_id=np.array(name_ids, dtype=np.int32),
        pid=column(4, np.int64),
        tid=column(5, np.int64),
        stream=column(7, np.int64),
        device=column(6, np.int64),
        correlation=column(8, np.int64),
        external_id=np.full(len(rows), -1, dtype=np.int64),
        nbytes=column(9, np.int64),
        copy_kind=copy_kind,
        host_memory=host_memory,
    )


def _copy_columns(
    names: list[str], name_id: np.ndarray, kind: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Direction and host memory of each copy, read from its name once per name."""
    directions = np.zeros(len(names), dtype=np.int8)
    memories = np.zeros(len(names), dtype=np.int8)
    for i, label in enumerate(names):
        directions[i], memories[i] = _parse_copy_name(label)
    is_copy = kind == EventKind.MEMCPY
    copy_kind = np.where(is_copy, directions[name_id] if len(names) else 0, 0).astype(np.int8)
    host_memory = np.where(is_copy, memories[name_id] if len(names) else 0, 0).astype(np.int8)
    return copy_kind, host_memory


def _parse_copy_name(label: str) -> tuple[CopyKind, HostMemory]:
    """``Memcpy DtoH (Device -> Pageable)`` gives (DTOH, PAGEABLE): the memory on
    the host's side of the copy (the device side for DtoD)."""
    match = _COPY_NAME.search(label)
    if match is None:
        return CopyKind.UNKNOWN, HostMemory.UNKNOWN
    direction = {
        "HtoD": CopyKind.HTOD,
        "H2D": CopyKind.HTOD,
        "DtoH": CopyKind.DTOH,
        "D2H": CopyKind.DTOH,
        "DtoD": CopyKind.DTOD,
        "D2D": CopyKind.DTOD,
        "HtoH": CopyKind.HTOH,
        "H2H": CopyKind.HTOH,
        "PtoP": CopyKind.PTOP,
        "P2P": CopyKind.PTOP,
    }[match.group(1)]
    source, target = match.group(2), match.group(3)
    host_side = target if direction == CopyKind.DTOH else source
    memory = {
        "pageable": HostMemory.PAGEABLE,
        "pinned": HostMemory.PINNED,
        "device": HostMemory.DEVICE,
        "managed": HostMemory.MANAGED,
    }.get((host_side or "").lower(), HostMemory.UNKNOWN)
    if direction == CopyKind.DTOD and memory == HostMemory.UNKNOWN:
        memory = HostMemory.DEVICE
    return direction, memory


class _Columns:
    """Accumulates the columns of successive slices of ``traceEvents``."""

    FIELDS = (
        "index",
        "ts_us",
        "dur_us",
        "category",
        "name_id",
        "pid",
        "tid",
        "stream",
        "device",
        "correlation",
        "external_id",
        "nbytes",
        "collective",
    )

    EMPTY = {"ts_us": np.float64, "dur_us": np.float64, "collective": np.bool_}

    def __init__(self, max_events: int) -> None:
        self.max_events = max_events
        self.parts: dict[str, list[np.ndarray]] = {key: [] for key in self.FIELDS}
        self.names: dict[str, int] = {}
        self.categories: dict[str, int] = {}
        self.lane_codes: dict[str, int] = {}
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.event_count = 0
        self.integral_timestamps = True

    def add(self, events: list[Any], first: int) -> None:
        self.event_count = first + len(events)
        if self.event_count > self.max_events:
            raise TraceError(f"traceEvents: more than {self.max_events} events, over the limit")
        for i, event in enumerate(events):
            if type(event) is not dict:
                raise TraceError(f"traceEvents[{first + i}]: not an object")
        phases = [event.get("ph") for event in events]
        all_ts = [event.get("ts") for event in events]
        if self.integral_timestamps and not all(type(ts) is int for ts in all_ts):
            self.integral_timestamps = False
        for i, phase in enumerate(phases):
            if phase == "M":
                self._name_lane(events[i], first + i)
        picks = [i for i, phase in enumerate(phases) if phase == "X"]
        if picks:
            self._add_complete(
                [events[i] for i in picks], [all_ts[i] for i in picks], np.array(picks) + first
            )

    def _add_complete(self, events: list[dict[str, Any]], ts: list[Any], where: np.ndarray) -> None:
        parts = self.parts
        parts["index"].append(where.astype(np.int64))
        parts["ts_us"].append(_numbers(ts, "ts", where))
        durations = _numbers([event.get("dur") for event in events], "dur", where)
        negative = np.flatnonzero(durations < 0)
        if len(negative):
            raise TraceError(f"traceEvents[{where[negative[0]]}].dur: negative")
        parts["dur_us"].append(durations)
        parts["name_id"].append(
            _codes([event.get("name", "") for event in events], self.names, "name", where)
        )
        parts["category"].append(
            _codes([event.get("cat", "") for event in events], self.categories, "cat", where)
        )
        parts["pid"].append(self._lanes([event.get("pid", -1) for event in events], "pid", where))
        parts["tid"].append(self._lanes([event.get("tid", -1) for event in events], "tid", where))
        given = [event.get("args") for event in events]
        for i, value in enumerate(given):
            if value is not None and type(value) is not dict:
                raise TraceError(f"traceEvents[{where[i]}].args: not an object")
        args: list[dict[str, Any]] = [value or _EMPTY_ARGS for value in given]
        for column, key in (
            ("stream", "stream"),
            ("device", "device"),
            ("correlation", "correlation"),
            ("external_id", "External id"),
            ("nbytes", "bytes"),
        ):
            parts[column].append(
                _integers([value.get(key, -1) for value in args], f"args.{key}", where)
            )
        parts["collective"].append(
            np.array(["Collective name" in value for value in args], dtype=bool)
        )

    def _name_lane(self, event: dict[str, Any], position: int) -> None:
        args = event.get("args")
        label = args.get("name") if isinstance(args, dict) else None
        if not isinstance(label, str):
            return
        pid = self._lane(event.get("pid", -1), "pid", position)
        if event.get("name") == "process_name":
            self.process_names[pid] = label
        elif event.get("name") == "thread_name":
            self.thread_names[(pid, self._lane(event.get("tid", -1), "tid", position))] = label

    def _lane(self, value: Any, key: str, position: int) -> int:
        if type(value) is int:
            return value
        if type(value) is str:
            return self.lane_codes.setdefault(value, -2 - len(self.lane_codes))
        raise TraceError(f"traceEvents[{position}].{key}: not an integer or string")

    def _lanes(self, values: list[Any], key: str, where: np.ndarray) -> np.ndarray:
        """Process and thread ids; a string id gets a negative code (its name is
        kept in ``Trace.lane_labels``)."""
        array = _infer_array(values)
        if array is not None and array.dtype.kind == "i":
            return array.astype(np.int64, copy=False)
        return np.array(
            [self._lane(value, key, int(where[i])) for i, value in enumerate(values)],
            dtype=np.int64,
        )

    def finish(self, header: dict[str, Any], *, name: str, raw: _RawEvents) -> Trace:
        columns = {
            key: np.concatenate(parts)
            if parts
            else np.zeros(0, dtype=self.EMPTY.get(key, np.int64))
            for key, parts in self.parts.items()
        }
        names = list(self.names)
        categories = list(self.categories)
        kineto = any(key in header for key in _KINETO_KEYS) or any(
            c.lower() in _KINETO_CATEGORIES for c in categories
        )
        name_id = columns["name_id"].astype(np.int32)
        if kineto:
            kind = _kinds_from_categories(
                categories, names, columns["category"], name_id, columns["collective"]
            )
            stream = columns["stream"].astype(np.int64)
        else:
            kind, stream = self._kinds_from_lanes(columns, names)
        gpu = np.isin(kind, GPU_ACTIVITY)
        stream = np.where(gpu & (stream < 0), columns["tid"].astype(np.int64), stream)
        copy_kind, host_memory = _copy_columns(names, name_id, kind)
        rank, world_size = _distributed_info(header)
        return Trace(
            source="kineto" if kineto else "jax",
            name=name,
            rank=rank,
            world_size=world_size,
            metadata=header,
            names=names,
            event_count=self.event_count,
            integral_timestamps=self.integral_timestamps,
            index=columns["index"].astype(np.int64),
            ts_us=columns["ts_us"].astype(np.float64),
            dur_us=columns["dur_us"].astype(np.float64),
            kind=kind,
            name_id=name_id,
            pid=columns["pid"].astype(np.int64),
            tid=columns["tid"].astype(np.int64),
            stream=stream,
            device=columns["device"].astype(np.int64),
            correlation=columns["correlation"].astype(np.int64),
            external_id=columns["external_id"].astype(np.int64),
            nbytes=columns["nbytes"].astype(np.int64),
            copy_kind=copy_kind,
            host_memory=host_memory,
            process_names=self.process_names,
            thread_names=self.thread_names,
            lane_labels={code: label for label, code in self.lane_codes.items()},
            raw=raw,
        )

    def _kinds_from_lanes(
        self, columns: dict[str, np.ndarray], names: list[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        pid = columns["pid"].astype(np.int64)
        tid = columns["tid"].astype(np.int64)
        kind = np.full(len(pid), EventKind.CPU_OP, dtype=np.int8)
        stream = np.full(len(pid), -1, dtype=np.int64)
        lanes = (
            np.unique(np.stack([pid, tid], axis=1), axis=0)
            if len(pid)
            else np.zeros((0, 2), np.int64)
        )
        for lane_pid, lane_tid in lanes.tolist():
            rows = (pid == lane_pid) & (tid == lane_tid)
            lane_kind, lane_stream = _classify_by_lane(
                self.process_names.get(lane_pid, ""),
                self.thread_names.get((lane_pid, lane_tid), ""),
            )
            kind[rows] = lane_kind
            stream[rows] = lane_stream if lane_stream is not None else lane_tid
        python = np.array([n.startswith("$") for n in names] or [False])
        kind[(kind == EventKind.CPU_OP) & python[columns["name_id"].astype(np.int64)]] = (
            EventKind.PYTHON_FUNCTION
        )
        on_device = kind == EventKind.KERNEL
        copies = np.array(["memcpy" in n.lower() for n in names] or [False])
        sets = np.array(["memset" in n.lower() for n in names] or [False])
        ids = columns["name_id"].astype(np.int64)
        collectives = np.array([bool(_COLLECTIVE_NAME.search(n)) for n in names] or [False])
        kind[on_device & copies[ids]] = EventKind.MEMCPY
        kind[on_device & sets[ids]] = EventKind.MEMSET
        kind[on_device & collectives[ids]] = EventKind.COMM_KERNEL
        stream[~np.isin(kind, GPU_ACTIVITY)] = -1
        return kind, stream


def _kinds_from_categories(
    categories: list[str],
    names: list[str],
    category: np.ndarray,
    name_id: np.ndarray,
    collective: np.ndarray,
) -> np.ndarray:
    """Kineto: the ``cat`` says what an event is; a kernel is a communication
    kernel when its name contains "nccl" (any case) or it has a ``Collective name``."""
    by_category = np.array(
        [int(_KINETO_CATEGORIES.get(c.lower(), EventKind.OTHER)) for c in categories] or [0],
        dtype=np.int8,
    )
    kind = by_category[category.astype(np.int64)]
    nccl = np.array(["nccl" in n.lower() for n in names] or [False])
    kind[(kind == EventKind.KERNEL) & (nccl[name_id] | collective)] = EventKind.COMM_KERNEL
    return kind


_COLLECTIVE_NAME = re.compile(
    r"nccl|all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute", re.IGNORECASE
)


def _classify_by_lane(process: str, thread: str) -> tuple[EventKind, int | None]:
    """JAX lanes: a device process (``/device:GPU:0``) has one ``Stream #N`` lane
    per CUDA stream holding its kernels and copies; its other lanes (``XLA Ops``,
    ``XLA Modules``) summarise the same time and count as annotations. Host
    lanes hold operations, and Python frames named ``$file.py:line function``."""
    if re.search(r"/device:(GPU|TPU)", process):
        if thread.startswith("Stream"):
            number = re.search(r"#(\d+)", thread)
            return EventKind.KERNEL, int(number.group(1)) if number else None
        return EventKind.GPU_ANNOTATION, None
    return EventKind.CPU_OP, None


def _numbers(values: list[Any], key: str, where: np.ndarray) -> np.ndarray:
    """A float column; numpy infers an integer or float dtype only when every
    value is a number, so the per-value check runs only on bad input."""
    array = _infer_array(values)
    if array is None or array.dtype.kind not in "if":
        for i, value in enumerate(values):
            if type(value) not in (int, float):
                problem = "missing" if value is None else "not a number"
                raise TraceError(f"traceEvents[{where[i]}].{key}: {problem}")
        array = np.array(values, dtype=np.float64)
    return array.astype(np.float64, copy=False)


def _integers(values: list[Any], key: str, where: np.ndarray) -> np.ndarray:
    array = _infer_array(values)
    if array is None or array.dtype.kind != "i":
        for i, value in enumerate(values):
            if type(value) is not int:
                raise TraceError(f"traceEvents[{where[i]}].{key}: not an integer")
        raise TraceError(f"traceEvents[{where[0]}...].{key}: integer out of range")
    return array.astype(np.int64, copy=False)


def _infer_array(values: list[Any]) -> np.ndarray | None:
    try:
        array = np.array(values)
    except (ValueError, TypeError, OverflowError):
        return None
    return array if array.ndim == 1 else None


def _codes(values: list[Any], table: dict[str, int], key: str, where: np.ndarray) -> np.ndarray:
    """Strings as indices into ``table``, which grows with each new string."""
    try:
        distinct = dict.fromkeys(values)  # first-appearance order: ids do not depend on hashing
    except TypeError:
        distinct = {None: None}
    if not all(type(value) is str for value in distinct):
        for i, value in enumerate(values):
            if type(value) is not str:
                raise TraceError(f"traceEvents[{where[i]}].{key}: not a string")
    for value in distinct:
        if value not in table:
            table[value] = len(table)
    return np.fromiter(map(table.__getitem__, values), dtype=np.int64, count=len(values))


def _distributed_info(header: dict[str, Any]) -> tuple[int, int]:
    info = header.get("distributedInfo")
    if info is None:
        return 0, 1
    if not isinstance(info, dict):
        raise TraceError("distributedInfo: not an object")
    rank, world_size = info.get("rank", 0), info.get("world_size", 1)
    if type(rank) is not int or rank < 0:
        raise TraceError("distributedInfo.rank: not a non-negative integer")
    if type(world_size) is not int or world_size < 1:
        raise TraceError("distributedInfo.world_size: not a positive integer")
    return rank, world_size
