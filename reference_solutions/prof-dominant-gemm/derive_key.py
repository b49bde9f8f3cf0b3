"""Derives this task's answer key from its trace, with the conventions
statement.md states, using the platform's trace library (graders.profiling).
Run from the bundle's folder: python derive_key.py > key.json"""

import json
import sys
from pathlib import Path

from graders.profiling.analysis import as_json, kernel_table, load_trace, temporal_breakdown
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


breakdown = temporal_breakdown(trace)
planted(breakdown.compute_pct > 90 and top.share_pct > 80, "a GPU busy with one dominant kernel")
rows = [
    row
    for row in range(len(trace.kind))
    if trace.kind[row] == EventKind.KERNEL and trace.names[trace.name_id[row]] == top.name
]
key = {
    "bottleneck": "compute_bound",
    "dominant_kernel_share_pct": top.share_pct,
    "compute_pct": breakdown.compute_pct,
    "evidence": kernel_ids(rows),
    "fixes": ["faster_gemm"],
}

key["dominant_kernel"] = top.name
key["gpu_idle_pct"] = idle_pct
print(json.dumps(as_json(key), indent=2, sort_keys=True))
