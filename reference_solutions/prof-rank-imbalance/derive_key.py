"""Derives this task's answer key from its traces, with the conventions
statement.md states, using the platform's trace library (graders.profiling).
Run from the bundle's folder: python derive_key.py > key.json"""

import json
import sys
from pathlib import Path

from graders.profiling.analysis import (
    as_json,
    kernel_table,
    load_trace,
    stragglers,
    temporal_breakdown,
)
from graders.profiling.trace import EventKind

traces = [
    load_trace(p.read_bytes(), name=str(p)) for p in sorted(Path("traces").glob("rank*.json.gz"))
]
trace = traces[0]
steps = len(trace.steps)
top = kernel_table(trace)[0]
idle_pct = temporal_breakdown(trace).idle_pct


def planted(condition: bool, what: str) -> None:
    """The trace must show what the statement says is planted in it."""
    if not condition:
        sys.exit(f"the trace does not show {what}")


def kernel_ids(rows) -> list[str]:
    return [f"corr:{int(trace.correlation[row])}" for row in rows]


imbalance = stragglers(traces)
planted(
    imbalance.straggler_rank is not None and imbalance.delay_us > 100,
    "one rank that the other waits for",
)
slow = traces[imbalance.straggler_rank]
rows = [
    row
    for row in range(len(slow.kind))
    if slow.kind[row] == EventKind.KERNEL
    and slow.names[slow.name_id[row]] == kernel_table(slow)[0].name
]
key = {
    "bottleneck": "load_imbalance",
    "straggler_rank": imbalance.straggler_rank,
    "straggler_delay_us": imbalance.delay_us,
    "evidence": [
        f"rank{imbalance.straggler_rank}/corr:{int(slow.correlation[row])}" for row in rows
    ],
    "fixes": ["rebalance_ranks"],
}

key["dominant_kernel"] = top.name
key["gpu_idle_pct"] = idle_pct
print(json.dumps(as_json(key), indent=2, sort_keys=True))
