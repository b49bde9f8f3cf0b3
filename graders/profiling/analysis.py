"""Analyses of a profiler trace: the figures a profiling task asks about.

Every analysis takes a ``Trace`` (see ``trace.py``) and an optional step
selection, and returns plain dataclasses of rounded numbers (microseconds to
the nanosecond, percentages to 0.01) that ``as_json`` turns into an answer key.
A key script loads a trace and calls these::

    from graders.profiling.analysis import load_trace, temporal_breakdown
    trace = load_trace(open("rank0.json.gz", "rb").read())
    print(temporal_breakdown(trace).idle_pct)

Conventions (a task states the ones its questions depend on)
-------------------------------------------------------------

Steps. A step is a ``ProfilerStep#N`` annotation on the CPU. ``steps=None``
means every step of the trace; ``steps=[2, 3]`` picks steps by their N. A
trace without step annotations (JAX, most Nsight exports) is analysed whole,
and ``steps`` must then be None.

The step of an event. A CPU event belongs to the step whose CPU span holds its
start, on any thread. A kernel, copy or memset belongs to the step of the
runtime call that launched it (same correlation), even when it runs after
that step has ended on the CPU; one with no launch call in the trace belongs
to the step whose CPU span holds its own start.

GPU activity. Kernels, memory copies and memsets occupy the GPU. A kernel is
*communication* when its name contains "nccl" (any case) or it carries a
``Collective name``, otherwise *compute*; copies and memsets are *memory*. The
time classes do not overlap: a moment is compute when any compute kernel
runs, else communication, else memory; it is idle when nothing runs.

The GPU window of a step. From the end of the previous step's last GPU event
(for the trace's first step, the step's CPU start) or the step's first GPU
event if that is earlier, to the end of the step's last GPU event. The
windows of consecutive steps tile the GPU timeline, so every idle moment
between two steps' work belongs to the later step: the GPU idle while the
data loader stalls at a step's start is that step's. Time-based figures
(``temporal_breakdown``, ``comm_comp_overlap``) count all GPU activity inside
the selected windows, whichever step launched it.

``conventions="hta"``: HolisticTraceAnalysis 0.5.0
----------------------------------------------------

``temporal_breakdown``, ``idle_time_by_cause``, ``launch_delays``,
``comm_comp_overlap`` and ``kernel_table`` can instead reproduce HTA's
``TraceAnalysis`` results, for tasks that cite HTA. It differs from the
default in four ways:

* with two or more distinct ``ProfilerStep`` names, HTA keeps only the CPU
  events that start before the last step starts, and the GPU events whose
  correlation matches one of those: the last step is dropped, GPU events with
  no launch call are dropped, and whatever ran before the first step stays;
* when any timestamp in the file is not a whole number, it rounds every start
  up and every end down to a whole microsecond;
* it has one window: from the first kept GPU event's start to the last one's
  end;
* it classifies GPU events by name: communication matches ``^nccl.*Kernel``,
  memory ``^Memcpy|^Memset|^dma``, compute is what matches none of
  ``^nccl.*Kernel``, ``.*Memcpy``, ``^Memset``, ``.*Sync``; anything else
  (a kernel named ``...Memcpy...``) is *other*. GPU events are the kept
  events that have a stream.

With ``conventions="hta"`` the window is fixed, so ``steps`` must be None.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import cxxfilt
import numpy as np

from graders.profiling.trace import (
    COPY_KIND_LABELS,
    HOST_MEMORY_LABELS,
    CallKind,
    CopyKind,
    EventKind,
    HostMemory,
    Trace,
    TraceError,
    load_nsys_sqlite,
    load_trace,
)

__all__ = [
    "CommOverlap",
    "CopyGroup",
    "DataLoaderStalls",
    "HostSync",
    "HostSyncs",
    "KernelRow",
    "LaunchStats",
    "RankSteps",
    "StepStall",
    "Stragglers",
    "StreamIdle",
    "TemporalBreakdown",
    "Trace",
    "TraceError",
    "as_json",
    "comm_comp_overlap",
    "dataloader_stalls",
    "host_syncs",
    "idle_time_by_cause",
    "kernel_table",
    "launch_delays",
    "load_nsys_sqlite",
    "load_trace",
    "memcpy_summary",
    "normalize_kernel_name",
    "stragglers",
    "temporal_breakdown",
]

Conventions = Literal["default", "hta"]

HTA_LAUNCH_CALLS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC"})
HTA_MEMORY_CALLS = frozenset({"cudaMemcpyAsync", "cudaMemsetAsync"})
KERNEL_WAIT_US = 30.0
"""HTA's ``consecutive_kernel_delay``: a gap shorter than this between two
kernels on a stream, not caused by the host, is launch overhead."""
RUNTIME_CUTOFF_US = 50.0
LAUNCH_DELAY_CUTOFF_US = 100.0
SHORT_KERNEL_US = 10.0
DATALOADER_NEXT = re.compile(r"DataLoader.*__next__")

_HTA_COMM = re.compile(r"^nccl.*Kernel")
_HTA_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_HTA_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")

# GPU time classes, in priority order; each is one bit in an interval sweep.
NONE, COMPUTE, COMMUNICATION, MEMORY, OTHER = 0, 1, 2, 3, 4
_CLASS_OF_KIND = {
    EventKind.KERNEL: COMPUTE,
    EventKind.COMM_KERNEL: COMMUNICATION,
    EventKind.MEMCPY: MEMORY,
    EventKind.MEMSET: MEMORY,
}


@dataclass(frozen=True)
class KernelRow:
    """One kernel name's share of the GPU kernel time."""

    name: str
    short_name: str
    kind: str
    count: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    share_pct: float


@dataclass(frozen=True)
class TemporalBreakdown:
    """How the GPU window's time divides; the percentages add up to 100.
    HTA's ``non_compute_time`` is communication + memory + other."""

    rank: int
    window_us: float
    compute_us: float
    communication_us: float
    memory_us: float
    other_us: float
    idle_us: float
    compute_pct: float
    communication_pct: float
    memory_pct: float
    other_pct: float
    idle_pct: float


@dataclass(frozen=True)
class StreamIdle:
    """Idle gaps between consecutive GPU events of one stream, by cause."""

    stream: int
    idle_us: float
    host_wait_us: float
    kernel_wait_us: float
    other_us: float
    host_wait_pct: float
    kernel_wait_pct: float
    other_pct: float


@dataclass(frozen=True)
class LaunchStats:
    """Launch call → GPU start, over every launched kernel (and copy) in scope."""

    launches: int
    shorter_than_launch: int
    shorter_than_launch_pct: float
    below_threshold: int
    threshold_us: float
    long_runtime: int
    long_delay: int
    delay_mean_us: float
    delay_p50_us: float
    delay_p90_us: float
    delay_p99_us: float
    delay_max_us: float


@dataclass(frozen=True)
class CommOverlap:
    """Share of communication time during which compute also runs (None: no
    communication)."""

    rank: int
    communication_us: float
    overlapped_us: float
    overlap_pct: float | None


@dataclass(frozen=True)
class HostSync:
    """A runtime call that blocked the host until the GPU caught up."""

    name: str
    step: int
    ts_us: float
    dur_us: float
    idle_after_us: float
    op: str | None
    ids: list[str]


@dataclass(frozen=True)
class HostSyncs:
    count: int
    total_us: float
    idle_after_us: float
    syncs: list[HostSync]


@dataclass(frozen=True)
class CopyGroup:
    """Memory copies of one direction and host memory."""

    kind: str
    memory: str
    count: int
    bytes: int
    total_us: float
    host_us: float
    ids: list[str]


@dataclass(frozen=True)
class RankSteps:
    """One rank's mean per-step figures over the selected steps."""

    rank: int
    steps: int
    step_time_us: float
    compute_us: float
    communication_us: float


@dataclass(frozen=True)
class Stragglers:
    ranks: list[RankSteps]
    straggler_rank: int | None
    delay_us: float


@dataclass(frozen=True)
class StepStall:
    step: int
    stall_us: float
    gpu_idle_us: float
    ids: list[str]


@dataclass(frozen=True)
class DataLoaderStalls:
    total_us: float
    gpu_idle_us: float
    steps: list[StepStall]


def as_json(result: Any) -> Any:
    """A result (dataclass, or list of them) as plain dicts and lists for JSON."""
    if isinstance(result, list):
        return [as_json(item) for item in result]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return result


def normalize_kernel_name(name: str) -> str:
    """A kernel's name without return type, template arguments, parameters and
    ``(anonymous namespace)::``, as HTA shortens names:
    ``void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`` gives
    ``at::native::vectorized_elementwise_kernel``. Itanium-mangled names
    (``_Z...``, up to ``MAX_MANGLED`` characters) are demangled first, by the C++
    runtime's demangler (``cxxfilt``); a name it refuses is kept as it is. Copy and
    memset names are kept whole."""
    return _normalize(name)


# A longer mangled name is no kernel's, and the demangler recurses on nesting.
MAX_MANGLED = 4096


@lru_cache(maxsize=65536)
def _normalize(name: str) -> str:
    text = name.strip()
    if text.startswith("_Z") and len(text) <= MAX_MANGLED:
        try:
            text = cxxfilt.demangle(text)
        except cxxfilt.InvalidName:
            return text
    if text.startswith(("Memcpy", "Memset")) or ("<" not in text and "(" not in text):
        return text
    text = text.replace("(anonymous namespace)::", "").replace("->", "")
    kept = []
    depth = 0
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">" and depth:
            depth -= 1
        elif depth == 0:
            kept.append(char)
    if depth:
        return name.strip()
    text = "".join(kept)
    cut = text.find("(")
    text = (text[:cut] if cut >= 0 else text).strip()
    return text.split(" ")[-1] if text else name.strip()


# --- which events and which time an analysis looks at ---------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """The events and GPU time an analysis covers, under one convention."""

    rows: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    gpu_class: np.ndarray
    windows: tuple[np.ndarray, np.ndarray]
    hta: bool


def _scope(trace: Trace, steps: Sequence[int] | None, conventions: Conventions) -> _Scope:
    if conventions == "hta":
        if steps is not None:
            raise ValueError("conventions='hta' fixes the window (every step but the last)")
        return _hta_scope(trace)
    if conventions != "default":
        raise ValueError(f"unknown conventions {conventions!r}: 'default' or 'hta'")
    gpu_class = _classes_by_kind(trace)
    busy = gpu_class != NONE
    if not trace.steps:
        if steps is not None:
            raise ValueError("the trace has no ProfilerStep annotations: steps must be None")
        rows = np.ones(len(trace), dtype=bool)
        windows = _span(trace.ts_us[busy], trace.end_us[busy])
    else:
        numbers = _selected_steps(trace, steps)
        rows = np.isin(trace.row_step, numbers)
        by_number = _step_windows(trace)
        windows = _merge(
            np.array([by_number[n][0] for n in numbers]),
            np.array([by_number[n][1] for n in numbers]),
        )
    return _Scope(rows, trace.ts_us, trace.end_us, gpu_class, windows, hta=False)


def _selected_steps(trace: Trace, steps: Sequence[int] | None) -> list[int]:
    present = [step.number for step in trace.steps]
    if steps is None:
        return present
    missing = sorted(set(steps) - set(present))
    if missing:
        raise ValueError(f"no ProfilerStep#{missing[0]} in the trace (steps: {present})")
    return sorted(set(steps))


def _classes_by_kind(trace: Trace) -> np.ndarray:
    classes = np.zeros(len(trace), dtype=np.int8)
    for kind, time_class in _CLASS_OF_KIND.items():
        classes[trace.kind == kind] = time_class
    return classes


def _step_windows(trace: Trace) -> dict[int, tuple[float, float]]:
    """Each step's GPU window, as the module docstring defines it."""
    gpu = np.flatnonzero(trace.is_gpu & (trace.row_step >= 0))
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    if len(gpu):
        numbers, group = np.unique(trace.row_step[gpu], return_inverse=True)
        starts = np.full(len(numbers), np.inf)
        ends = np.full(len(numbers), -np.inf)
        np.minimum.at(starts, group, trace.ts_us[gpu])
        np.maximum.at(ends, group, trace.end_us[gpu])
        first = dict(zip(numbers.tolist(), starts.tolist(), strict=True))
        last = dict(zip(numbers.tolist(), ends.tolist(), strict=True))
    windows = {}
    previous_end: float | None = None
    for step in trace.steps:
        first_gpu = first.get(step.number, step.ts_us)
        last_gpu = last.get(step.number, step.end_us)
        anchor = step.ts_us if previous_end is None else previous_end
        start = min(anchor, first_gpu)
        end = max(last_gpu, start)
        windows[step.number] = (start, end)
        previous_end = end
    return windows


def _hta_scope(trace: Trace) -> _Scope:
    ts, end = trace.ts_us, trace.end_us
    if not trace.integral_timestamps:
        ts, end = np.ceil(ts), np.floor(end)
    gpu_like = (trace.stream >= 0) & (trace.correlation >= 0)
    sync_ids = [i for i, name in enumerate(trace.names) if name in ("Event Sync", "Context Sync")]
    gpu_like |= np.isin(trace.name_id, sync_ids)
    step_ids = [i for i, name in enumerate(trace.names) if "ProfilerStep" in name]
    keep = np.ones(len(trace), dtype=bool)
    if len(step_ids) >= 2:
        cpu = ~gpu_like
        last_start = ts[cpu & np.isin(trace.name_id, step_ids)].max()
        kept_cpu = cpu & (ts < last_start)
        kept_gpu = gpu_like & np.isin(trace.correlation, trace.correlation[kept_cpu])
        keep = kept_cpu | kept_gpu
    gpu_class = np.zeros(len(trace), dtype=np.int8)
    on_gpu = keep & (trace.stream >= 0)
    by_name = np.array([_hta_class(name) for name in trace.names] or [NONE], dtype=np.int8)
    gpu_class[on_gpu] = by_name[trace.name_id[on_gpu]]
    busy = gpu_class != NONE
    return _Scope(keep, ts, end, gpu_class, _span(ts[busy], end[busy]), hta=True)


def _hta_class(name: str) -> int:
    if _HTA_COMM.match(name):
        return COMMUNICATION
    if _HTA_MEMORY.match(name):
        return MEMORY
    if not _HTA_NOT_COMPUTE.match(name):
        return COMPUTE
    return OTHER


# --- interval arithmetic --------------------------------------------------------------------------


def _span(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    return np.array([starts.min()]), np.array([ends.max()])


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint intervals; touching ones join."""
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(starts, kind="stable")
    starts = starts[order]
    reach = np.maximum.accumulate(np.maximum(ends[order], starts))
    new_group = np.empty(len(starts), dtype=bool)
    new_group[0] = True
    new_group[1:] = starts[1:] > reach[:-1]
    group_starts = np.flatnonzero(new_group)
    group_ends = np.append(group_starts[1:] - 1, len(starts) - 1)
    return starts[group_starts], reach[group_ends]


def _segments(layers: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Cut time at every boundary of the layers (each merged: disjoint intervals)
    and return each piece's length and the bitmask of layers covering it
    (bit k for layer k)."""
    times = [np.concatenate([starts, ends]) for starts, ends in layers]
    steps = [
        np.concatenate([np.full(len(starts), 1 << bit), np.full(len(ends), -(1 << bit))])
        for bit, (starts, ends) in enumerate(layers)
    ]
    all_times = np.concatenate(times) if times else np.zeros(0)
    if len(all_times) < 2:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    order = np.argsort(all_times, kind="stable")
    state = np.cumsum(np.concatenate(steps)[order])
    return np.diff(all_times[order]), state[:-1]


def _class_layers(scope: _Scope) -> list[tuple[np.ndarray, np.ndarray]]:
    """The window, then the merged intervals of each GPU time class."""
    layers = [scope.windows]
    for time_class in (COMPUTE, COMMUNICATION, MEMORY, OTHER):
        rows = scope.gpu_class == time_class
        layers.append(_merge(scope.ts[rows], np.maximum(scope.end[rows], scope.ts[rows])))
    return layers


def _covered_before(busy: tuple[np.ndarray, np.ndarray], times: np.ndarray) -> np.ndarray:
    """For each time, how long the merged intervals ``busy`` cover before it."""
    starts, ends = busy
    if len(starts) == 0:
        return np.zeros(len(times))
    lengths = ends - starts
    before = np.concatenate([[0.0], np.cumsum(lengths)])
    at = np.searchsorted(starts, times, side="right") - 1
    inside = np.clip(times - starts[np.maximum(at, 0)], 0, lengths[np.maximum(at, 0)])
    return np.where(at >= 0, before[np.maximum(at, 0)] + inside, 0.0)


def _gpu_busy(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    gpu = trace.is_gpu
    return _merge(trace.ts_us[gpu], trace.end_us[gpu])


def _us(value: Any) -> float:
    return round(float(value), 3)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


# --- the analyses ---------------------------------------------------------------------------------


def temporal_breakdown(
    trace: Trace, steps: Sequence[int] | None = None, *, conventions: Conventions = "default"
) -> TemporalBreakdown:
    """Percent of the GPU window spent in compute, communication, memory and
    idle (HTA's ``get_temporal_breakdown``, with non-compute split further)."""
    scope = _scope(trace, steps, conventions)
    lengths, state = _segments(_class_layers(scope))
    in_window = (state & 1) != 0
    seen = np.zeros(len(state), dtype=bool)
    totals = {}
    for time_class in (COMPUTE, COMMUNICATION, MEMORY, OTHER):
        active = in_window & ~seen & ((state & (1 << time_class)) != 0)
        totals[time_class] = float(lengths[active].sum())
        seen |= active
    window = float(lengths[in_window].sum())
    idle = float(lengths[in_window & ~seen].sum())
    return TemporalBreakdown(
        rank=trace.rank,
        window_us=_us(window),
        compute_us=_us(totals[COMPUTE]),
        communication_us=_us(totals[COMMUNICATION]),
        memory_us=_us(totals[MEMORY]),
        other_us=_us(totals[OTHER]),
        idle_us=_us(idle),
        compute_pct=_pct(totals[COMPUTE], window),
        communication_pct=_pct(totals[COMMUNICATION], window),
        memory_pct=_pct(totals[MEMORY], window),
        other_pct=_pct(totals[OTHER], window),
        idle_pct=_pct(idle, window),
    )


def comm_comp_overlap(
    trace: Trace, steps: Sequence[int] | None = None, *, conventions: Conventions = "default"
) -> CommOverlap:
    """Percent of communication-kernel time during which a compute kernel also
    runs (HTA's ``get_comm_comp_overlap``), inside the GPU window."""
    scope = _scope(trace, steps, conventions)
    lengths, state = _segments(_class_layers(scope))
    in_window = (state & 1) != 0
    communicating = in_window & ((state & (1 << COMMUNICATION)) != 0)
    overlapped = communicating & ((state & (1 << COMPUTE)) != 0)
    total = float(lengths[communicating].sum())
    both = float(lengths[overlapped].sum())
    return CommOverlap(
        rank=trace.rank,
        communication_us=_us(total),
        overlapped_us=_us(both),
        overlap_pct=_pct(both, total) if total > 0 else None,
    )


def idle_time_by_cause(
    trace: Trace,
    steps: Sequence[int] | None = None,
    *,
    kernel_wait_us: float = KERNEL_WAIT_US,
    conventions: Conventions = "default",
) -> list[StreamIdle]:
    """Per stream, the gaps between consecutive GPU events split by cause, as
    HTA's ``get_idle_time_breakdown`` does. The gap before an event is
    *host wait* when its launch call started after the previous event on the
    stream had ended (the host was late); otherwise *kernel wait* when the
    gap is shorter than ``kernel_wait_us`` (launch overhead between
    back-to-back kernels); otherwise *other* (e.g. waiting on another stream's
    event). A gap belongs to the event that ends it, so it counts when that
    event is in the selected steps; overlapping events on one stream leave no
    gap (HTA counts the overlap as negative idle)."""
    scope = _scope(trace, steps, conventions)
    if scope.hta:
        # HTA sees only the kept events, so the previous event is a kept one too.
        candidates = np.flatnonzero(trace.is_gpu & scope.rows & (trace.stream >= 0))
    else:
        candidates = np.flatnonzero(trace.is_gpu)
    order = candidates[np.lexsort((scope.ts[candidates], trace.stream[candidates]))]
    if len(order) < 2:
        return []
    current, previous = order[1:], order[:-1]
    same_stream = trace.stream[current] == trace.stream[previous]
    previous_end = scope.end[previous]
    gap = scope.ts[current] - previous_end
    if not scope.hta:
        gap = np.maximum(gap, 0.0)
    launch = trace.launch_row[current]
    launch_ts = np.where(launch >= 0, scope.ts[np.maximum(launch, 0)], -np.inf)
    host_wait = launch_ts > previous_end
    kernel_wait = ~host_wait & (gap < kernel_wait_us)
    counted = same_stream & scope.rows[current]
    streams = trace.stream[current]
    result = []
    for stream in np.unique(streams[counted]).tolist():
        mine = counted & (streams == stream)
        host = float(gap[mine & host_wait].sum())
        kernel = float(gap[mine & kernel_wait].sum())
        other = float(gap[mine & ~host_wait & ~kernel_wait].sum())
        idle = host + kernel + other
        result.append(
            StreamIdle(
                stream=int(stream),
                idle_us=_us(idle),
                host_wait_us=_us(host),
                kernel_wait_us=_us(kernel),
                other_us=_us(other),
                host_wait_pct=_pct(host, idle),
                kernel_wait_pct=_pct(kernel, idle),
                other_pct=_pct(other, idle),
            )
        )
    return result


def launch_delays(
    trace: Trace,
    steps: Sequence[int] | None = None,
    *,
    threshold_us: float = SHORT_KERNEL_US,
    runtime_cutoff_us: float = RUNTIME_CUTOFF_US,
    launch_delay_cutoff_us: float = LAUNCH_DELAY_CUTOFF_US,
    include_memory: bool = True,
    conventions: Conventions = "default",
) -> LaunchStats:
    """Each launched GPU event's delay from the end of its launch call to its
    start (clipped at 0), as HTA's ``get_cuda_kernel_launch_stats`` computes it.

    ``shorter_than_launch`` counts events that ran for less time than their
    launch call took: the host cannot keep the GPU busy with those (HTA's
    "GPU events with a shorter duration than the corresponding CPU events").
    ``below_threshold`` counts those under ``threshold_us``; ``long_runtime``
    the launch calls over ``runtime_cutoff_us`` and ``long_delay`` the delays
    over ``launch_delay_cutoff_us`` (HTA's outlier cut-offs, 50 and 100 µs).
    Launch calls are kernel launches and, with ``include_memory``, async
    copies and memsets (HTA: ``cudaLaunchKernel``, ``cudaLaunchKernelExC``,
    ``cudaMemcpyAsync``, ``cudaMemsetAsync``)."""
    scope = _scope(trace, steps, conventions)
    gpu = np.flatnonzero(trace.is_gpu & scope.rows & (trace.launch_row >= 0))
    launch = trace.launch_row[gpu]
    if scope.hta:
        allowed = HTA_LAUNCH_CALLS | (HTA_MEMORY_CALLS if include_memory else frozenset())
        ids = [i for i, name in enumerate(trace.names) if name in allowed]
        chosen = np.isin(trace.name_id[launch], ids) & (trace.stream[gpu] >= 0)
    else:
        chosen = trace.call_kind[launch] == CallKind.LAUNCH
        if not include_memory:
            chosen &= np.isin(trace.kind[gpu], (EventKind.KERNEL, EventKind.COMM_KERNEL))
    gpu, launch = gpu[chosen], launch[chosen]
    cpu_dur = scope.end[launch] - scope.ts[launch]
    gpu_dur = scope.end[gpu] - scope.ts[gpu]
    delay = np.maximum(scope.ts[gpu] - scope.end[launch], 0.0)
    count = len(gpu)
    shorter = int((gpu_dur < cpu_dur).sum())
    quantiles = np.percentile(delay, [50, 90, 99]) if count else np.zeros(3)
    return LaunchStats(
        launches=count,
        shorter_than_launch=shorter,
        shorter_than_launch_pct=_pct(shorter, count),
        below_threshold=int((gpu_dur < threshold_us).sum()),
        threshold_us=threshold_us,
        long_runtime=int((cpu_dur > runtime_cutoff_us).sum()),
        long_delay=int((delay > launch_delay_cutoff_us).sum()),
        delay_mean_us=_us(delay.mean() if count else 0.0),
        delay_p50_us=_us(quantiles[0]),
        delay_p90_us=_us(quantiles[1]),
        delay_p99_us=_us(quantiles[2]),
        delay_max_us=_us(delay.max() if count else 0.0),
    )


def kernel_table(
    trace: Trace,
    steps: Sequence[int] | None = None,
    *,
    group_by: Literal["name", "short_name"] = "name",
    conventions: Conventions = "default",
) -> list[KernelRow]:
    """Kernels (compute and communication; not copies or memsets) grouped by
    name, with count, total, mean, min and max duration and share of all
    kernel time, sorted by total time, longest first. ``group_by="short_name"``
    groups by ``normalize_kernel_name``, which joins template instances."""
    scope = _scope(trace, steps, conventions)
    rows = np.flatnonzero(
        scope.rows & np.isin(trace.kind, (EventKind.KERNEL, EventKind.COMM_KERNEL))
    )
    if len(rows) == 0:
        return []
    if group_by == "short_name":
        short_ids: dict[str, int] = {}
        by_name = np.array(
            [short_ids.setdefault(_normalize(n), len(short_ids)) for n in trace.names]
        )
        labels = list(short_ids)
        keys = by_name[trace.name_id[rows]]
    else:
        labels = trace.names
        keys = trace.name_id[rows].astype(np.int64)
    durations = np.maximum(scope.end[rows] - scope.ts[rows], 0.0)
    groups, member = np.unique(keys, return_inverse=True)
    counts = np.bincount(member)
    totals = np.bincount(member, weights=durations)
    order = np.lexsort((durations, member))
    firsts = np.searchsorted(member[order], np.arange(len(groups)))
    lasts = np.append(firsts[1:], len(order)) - 1
    minimums, maximums = durations[order][firsts], durations[order][lasts]
    communication = np.bincount(member, weights=trace.kind[rows] == EventKind.COMM_KERNEL) > 0
    grand_total = float(totals.sum())
    table = [
        KernelRow(
            name=labels[int(group)],
            short_name=_normalize(labels[int(group)]),
            kind="communication" if communication[i] else "compute",
            count=int(counts[i]),
            total_us=_us(totals[i]),
            mean_us=_us(totals[i] / counts[i]),
            min_us=_us(minimums[i]),
            max_us=_us(maximums[i]),
            share_pct=_pct(totals[i], grand_total),
        )
        for i, group in enumerate(groups.tolist())
    ]
    return sorted(table, key=lambda row: (-row.total_us, row.name))


def host_syncs(trace: Trace, steps: Sequence[int] | None = None) -> HostSyncs:
    """The runtime calls in the selected steps that block the host until the
    GPU is done (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
    ``cudaEventSynchronize``, synchronous ``cudaMemcpy``; ``.item()`` ends in
    one), with their evidence ids and the innermost operator around each.

    ``idle_after_us`` is the length of the GPU idle gap in which the call
    returned: from the end of the last GPU activity before its return to the
    start of the next (0 when the GPU was still busy when it returned, or
    nothing ran after it)."""
    scope = _scope(trace, steps, "default")
    rows = np.flatnonzero(scope.rows & (trace.call_kind == CallKind.SYNC))
    rows = rows[np.argsort(trace.ts_us[rows], kind="stable")]
    idle = _idle_gap_at(_gpu_busy(trace), trace.end_us[rows])
    operators = _enclosing_operators(trace, rows)
    syncs = [
        HostSync(
            name=trace.label(row),
            step=int(trace.row_step[row]),
            ts_us=_us(trace.ts_us[row]),
            dur_us=_us(trace.dur_us[row]),
            idle_after_us=_us(idle[i]),
            op=operators[i],
            ids=trace.evidence_ids(row),
        )
        for i, row in enumerate(rows.tolist())
    ]
    return HostSyncs(
        count=len(syncs),
        total_us=_us(trace.dur_us[rows].sum()),
        idle_after_us=_us(idle.sum()),
        syncs=syncs,
    )


def _idle_gap_at(busy: tuple[np.ndarray, np.ndarray], times: np.ndarray) -> np.ndarray:
    starts, ends = busy
    if len(starts) == 0:
        return np.zeros(len(times))
    at = np.searchsorted(starts, times, side="right") - 1
    previous_end = np.where(at >= 0, ends[np.maximum(at, 0)], times)
    has_next = at + 1 < len(starts)
    next_start = starts[np.minimum(at + 1, len(starts) - 1)]
    gap = np.where(has_next & (previous_end <= times), next_start - previous_end, 0.0)
    return np.maximum(gap, 0.0)


def _enclosing_operators(trace: Trace, rows: np.ndarray, reach: int = 64) -> list[str | None]:
    """For each row, the innermost operator on its thread that contains it: the
    latest-starting one among the ``reach`` operators that start before it."""
    ops = np.flatnonzero(trace.kind == EventKind.CPU_OP)
    ops = ops[np.argsort(trace.ts_us[ops], kind="stable")]
    op_starts = trace.ts_us[ops]
    found: list[str | None] = []
    for row in rows.tolist():
        at = int(np.searchsorted(op_starts, trace.ts_us[row], side="right"))
        name = None
        for candidate in ops[max(at - reach, 0) : at][::-1].tolist():
            if (
                trace.pid[candidate] == trace.pid[row]
                and trace.tid[candidate] == trace.tid[row]
                and trace.end_us[candidate] >= trace.end_us[row]
            ):
                name = trace.label(candidate)
                break
        found.append(name)
    return found


def memcpy_summary(trace: Trace, steps: Sequence[int] | None = None) -> list[CopyGroup]:
    """Copies in the selected steps grouped by direction (HtoD, DtoH, DtoD) and
    host memory (pageable, pinned), sorted by total time, longest first.
    ``host_us`` is the time of the calls that launched them: a pageable
    device-to-host copy holds its ``cudaMemcpyAsync`` until it completes.
    ``ids`` name each copy by ``corr:<n>`` (``ev:<i>`` without a correlation)."""
    scope = _scope(trace, steps, "default")
    rows = np.flatnonzero(scope.rows & (trace.kind == EventKind.MEMCPY))
    groups = []
    for kind, memory in sorted(
        {
            (int(k), int(m))
            for k, m in zip(trace.copy_kind[rows], trace.host_memory[rows], strict=True)
        }
    ):
        members = rows[(trace.copy_kind[rows] == kind) & (trace.host_memory[rows] == memory)]
        launches = trace.launch_row[members]
        groups.append(
            CopyGroup(
                kind=COPY_KIND_LABELS[CopyKind(kind)],
                memory=HOST_MEMORY_LABELS[HostMemory(memory)],
                count=len(members),
                bytes=int(np.maximum(trace.nbytes[members], 0).sum()),
                total_us=_us(trace.dur_us[members].sum()),
                host_us=_us(trace.dur_us[launches[launches >= 0]].sum()),
                ids=[_copy_id(trace, row) for row in members.tolist()],
            )
        )
    return sorted(groups, key=lambda group: (-group.total_us, group.kind, group.memory))


def _copy_id(trace: Trace, row: int) -> str:
    if trace.correlation[row] >= 0:
        return f"corr:{int(trace.correlation[row])}"
    return f"ev:{int(trace.index[row])}"


def stragglers(traces: Sequence[Trace], steps: Sequence[int] | None = None) -> Stragglers:
    """Per rank, the mean CPU step time and the mean per-step compute and
    communication kernel time (sums of kernel durations) over the steps all
    ranks share (or ``steps``).

    The rule: in a synchronous collective every rank waits for the last one to
    arrive, and that waiting is inside its communication kernels. The
    straggler is the rank whose communication kernels take the least time,
    since it waits for nobody; ``delay_us`` is how much longer, per step, the
    other ranks spend in communication than it does (the mean over steps of
    the other ranks' mean minus the straggler's). Step times alone do not
    tell: the collective makes every rank's step equally long."""
    ranks = [trace.rank for trace in traces]
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"two traces of the same rank: {sorted(ranks)}")
    common = (
        set.intersection(*(set(_selected_steps(t, steps)) for t in traces)) if traces else set()
    )
    numbers = sorted(common)
    per_rank: dict[int, np.ndarray] = {}
    summaries = []
    for trace in sorted(traces, key=lambda t: t.rank):
        durations = {step.number: step.dur_us for step in trace.steps}
        compute = _kernel_time_per_step(trace, EventKind.KERNEL, numbers)
        communication = _kernel_time_per_step(trace, EventKind.COMM_KERNEL, numbers)
        per_rank[trace.rank] = communication
        count = max(len(numbers), 1)
        summaries.append(
            RankSteps(
                rank=trace.rank,
                steps=len(numbers),
                step_time_us=_us(sum(durations[n] for n in numbers) / count),
                compute_us=_us(compute.sum() / count),
                communication_us=_us(communication.sum() / count),
            )
        )
    if len(per_rank) < 2 or not numbers or not any(c.sum() > 0 for c in per_rank.values()):
        return Stragglers(ranks=summaries, straggler_rank=None, delay_us=0.0)
    straggler = min(per_rank, key=lambda rank: (per_rank[rank].sum(), rank))
    others = np.mean([c for rank, c in per_rank.items() if rank != straggler], axis=0)
    delay = float(np.mean(others - per_rank[straggler]))
    return Stragglers(ranks=summaries, straggler_rank=straggler, delay_us=_us(delay))


def _kernel_time_per_step(trace: Trace, kind: EventKind, numbers: list[int]) -> np.ndarray:
    """Summed durations of this kind's kernels in each of the steps ``numbers``."""
    rows = np.flatnonzero((trace.kind == kind) & np.isin(trace.row_step, numbers))
    position = np.searchsorted(numbers, trace.row_step[rows])
    return np.bincount(position, weights=trace.dur_us[rows], minlength=len(numbers))


def dataloader_stalls(trace: Trace, steps: Sequence[int] | None = None) -> DataLoaderStalls:
    """Time the selected steps spend in the DataLoader's ``__next__`` (the
    ``enumerate(DataLoader)#_...Iter.__next__`` operator or annotation) and how
    much of that time the GPU sat idle, per step."""
    scope = _scope(trace, steps, "default")
    names = [i for i, name in enumerate(trace.names) if DATALOADER_NEXT.search(name)]
    on_cpu = np.isin(trace.kind, (EventKind.CPU_OP, EventKind.USER_ANNOTATION))
    rows = np.flatnonzero(scope.rows & on_cpu & np.isin(trace.name_id, names))
    busy = _gpu_busy(trace)
    covered = _covered_before(busy, trace.end_us[rows]) - _covered_before(busy, trace.ts_us[rows])
    idle = trace.dur_us[rows] - covered
    per_step = []
    for number in sorted(set(trace.row_step[rows].tolist())):
        mine = trace.row_step[rows] == number
        per_step.append(
            StepStall(
                step=int(number),
                stall_us=_us(trace.dur_us[rows[mine]].sum()),
                gpu_idle_us=_us(idle[mine].sum()),
                ids=[f"ev:{int(trace.index[row])}" for row in rows[mine].tolist()],
            )
        )
    return DataLoaderStalls(
        total_us=_us(trace.dur_us[rows].sum()), gpu_idle_us=_us(idle.sum()), steps=per_step
    )
