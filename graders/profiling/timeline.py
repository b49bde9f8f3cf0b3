"""A trace as the browser's timeline draws it: one lane per CPU thread and per GPU
stream, one item per complete event, the events an answer cites marked.

The page embeds what ``timeline`` returns; the browser only draws it. Times
are microseconds from the trace's first event. A large trace is cut to its
first ``max_events`` events in time (the page says so), and each event's
``args`` are kept as the producer wrote them, cut to ``ARGS_CHARS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import orjson

from .trace import EventKind, Trace

MAX_EVENTS = 20_000
ARGS_CHARS = 2_000
# Lane order: GPU streams after the CPU threads that launch into them.
GPU_KINDS = frozenset({EventKind.KERNEL, EventKind.COMM_KERNEL, EventKind.MEMCPY, EventKind.MEMSET})
KIND_CLASSES = {
    EventKind.CPU_OP: "cpu-op",
    EventKind.USER_ANNOTATION: "annotation",
    EventKind.GPU_ANNOTATION: "annotation",
    EventKind.PYTHON_FUNCTION: "python",
    EventKind.CUDA_RUNTIME: "runtime",
    EventKind.CUDA_DRIVER: "runtime",
    EventKind.KERNEL: "kernel",
    EventKind.COMM_KERNEL: "comm",
    EventKind.MEMCPY: "memory",
    EventKind.MEMSET: "memory",
    EventKind.CUDA_SYNC: "sync",
}


def timeline(
    trace: Trace, *, cited: Iterable[int] = (), max_events: int = MAX_EVENTS
) -> dict[str, Any]:
    """Lanes and items for ``trace``; ``cited``: ``traceEvents`` positions to mark."""
    marked = {int(i) for i in cited}
    order = np.argsort(trace.ts_us, kind="stable")
    kept = order[:max_events]
    start = float(trace.ts_us[order[0]]) if len(order) else 0.0
    lanes: dict[tuple[int, int], dict[str, Any]] = {}
    items = []
    for row in kept.tolist():
        pid, tid = int(trace.pid[row]), int(trace.tid[row])
        kind = EventKind(int(trace.kind[row]))
        gpu = kind in GPU_KINDS
        lane = lanes.get((pid, tid))
        if lane is None:
            lane = {"id": len(lanes), "label": _lane_label(trace, pid, tid, row, gpu), "gpu": gpu}
            lanes[(pid, tid)] = lane
        position = int(trace.index[row])
        begin = float(trace.ts_us[row]) - start
        items.append(
            {
                "id": position,
                "lane": lane["id"],
                "start": round(begin, 3),
                "end": round(begin + max(float(trace.dur_us[row]), 0.001), 3),
                "name": trace.names[int(trace.name_id[row])],
                "kind": KIND_CLASSES.get(kind, "other"),
                "cited": position in marked,
                "args": _args(trace, position),
            }
        )
    _nest(items)
    ordered = sorted(lanes.values(), key=lambda lane: (lane["gpu"], lane["label"]))
    for number, lane in enumerate(ordered):
        lane["order"] = number
    return {
        "name": trace.name,
        "source": trace.source,
        "rank": trace.rank,
        "lanes": ordered,
        "items": items,
        "total": len(trace),
        "truncated": len(trace) > len(kept),
        "cited": sorted(marked),
        "cited_shown": sum(item["cited"] for item in items),
    }


def cited_positions(traces: Sequence[Trace], rank: int, evidence: Iterable[Any]) -> list[int]:
    """The ``traceEvents`` positions of the ``rank``-th trace that evidence ids name
    (``rank<r>/`` first when the task has several traces); ids naming other
    traces or nothing are left out."""
    from .evidence import EvidenceIndex

    index = EvidenceIndex(traces)
    positions: set[int] = set()
    for item in evidence:
        positions.update(event for trace, event in index.events(item) if trace == rank)
    return sorted(positions)


def _nest(items: list[dict[str, Any]]) -> None:
    """Each item's ``depth`` in its lane: 0 for an outermost event, one more for each
    event it lies inside (a CPU operator inside its step, a runtime call inside
    its operator), so that the browser draws nested events as a flame graph."""
    open_ends: dict[int, list[float]] = {}
    for item in sorted(items, key=lambda i: (i["lane"], i["start"], -i["end"])):
        stack = open_ends.setdefault(item["lane"], [])
        while stack and stack[-1] <= item["start"]:
            stack.pop()
        item["depth"] = len(stack)
        stack.append(item["end"])


def _lane_label(trace: Trace, pid: int, tid: int, row: int, gpu: bool) -> str:
    if gpu and trace.stream[row] >= 0:
        device = int(trace.device[row]) if trace.device[row] >= 0 else pid
        return f"GPU {device} stream {int(trace.stream[row])}"
    return trace.lane_name(pid, tid)


def _args(trace: Trace, position: int) -> str:
    try:
        args = trace.event(position).get("args")
    except (IndexError, ValueError):
        return ""
    if not args:
        return ""
    text = orjson.dumps(args, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "\N{HORIZONTAL ELLIPSIS}"
