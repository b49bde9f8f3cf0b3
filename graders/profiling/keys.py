"""What a profiling task's key script shares, so that the script says only what its
task asks: the traces of the bundle, the figures every generated task asks
for, the check that the trace shows what the statement says is planted, and the
key printed as validation reads it. A key script runs from the bundle's folder::

    from graders.profiling.keys import common_figures, load_traces, planted, print_key
    traces = load_traces()
    ...
    print_key({**common_figures(traces[0]), "bottleneck": "host_sync", ...})
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .analysis import as_json, kernel_table, load_trace, temporal_breakdown
from .trace import EventKind, Trace


def load_traces(folder: str = "traces") -> list[Trace]:
    """The bundle's ``rank*.json.gz`` traces, in rank order."""
    return [
        load_trace(p.read_bytes(), name=str(p)) for p in sorted(Path(folder).glob("rank*.json.gz"))
    ]


def planted(condition: bool, what: str) -> None:
    """Stop, naming ``what``, when the trace does not show what the statement plants."""
    if not condition:
        sys.exit(f"the trace does not show {what}")


def common_figures(trace: Trace) -> dict[str, Any]:
    """The dominant kernel (by GPU time) and the GPU's idle share of the steps."""
    return {
        "dominant_kernel": kernel_table(trace)[0].name,
        "gpu_idle_pct": temporal_breakdown(trace).idle_pct,
    }


def kernel_rows(trace: Trace, kind: EventKind = EventKind.KERNEL, name: str = "") -> list[int]:
    """The rows of the trace's kernels of ``kind`` (and ``name``, when given)."""
    return [
        row
        for row in range(len(trace.kind))
        if trace.kind[row] == kind and (not name or trace.names[trace.name_id[row]] == name)
    ]


def correlation_ids(trace: Trace, rows: Iterable[int], prefix: str = "") -> list[str]:
    """Evidence ids of rows by their correlation id (``rank1/`` first, as ``prefix``)."""
    return [f"{prefix}corr:{int(trace.correlation[row])}" for row in rows]


def print_key(key: Mapping[str, Any]) -> None:
    print(json.dumps(as_json(dict(key)), indent=2, sort_keys=True))
