"""Derives this task's answer key from its trace, with the conventions
statement.md states, using the platform's trace library (graders.profiling).
Run from the bundle's folder: python derive_key.py > key.json"""

import json
import sys
from pathlib import Path

from graders.profiling.analysis import (
    as_json,
    kernel_table,
    launch_delays,
    load_trace,
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


launch = launch_delays(trace)
rows = [
    row
    for row in range(len(trace.kind))
    if trace.kind[row] == EventKind.KERNEL
    and trace.launch_row[row] >= 0
    and trace.dur_us[row] < trace.dur_us[trace.launch_row[row]]
]
planted(launch.shorter_than_launch_pct > 50, "most kernels shorter than their launch")
key = {
    "bottleneck": "host_launch_bound",
    "short_kernel_pct": launch.shorter_than_launch_pct,
    "evidence": kernel_ids(rows),
    "fixes": ["cuda_graphs", "fuse_small_kernels"],
}

key["dominant_kernel"] = top.name
key["gpu_idle_pct"] = idle_pct
print(json.dumps(as_json(key), indent=2, sort_keys=True))
