"""Derives this task's answer key from its trace, with the conventions
statement.md states, using the platform's trace library (graders.profiling).
Run from the bundle's folder: python derive_key.py > key.json"""

import json
import sys
from pathlib import Path

from graders.profiling.analysis import (
    as_json,
    host_syncs,
    kernel_table,
    load_trace,
    temporal_breakdown,
)

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


syncs = host_syncs(trace)
planted(
    syncs.idle_after_us > 0.5 * temporal_breakdown(trace).idle_us,
    "synchronisations that idle the GPU",
)
key = {
    "bottleneck": "host_sync",
    "syncs_per_step": syncs.count / steps,
    "idle_after_syncs_us": syncs.idle_after_us,
    "evidence": [sync.ids[0] for sync in syncs.syncs],
    "fixes": ["remove_host_syncs"],
}

key["dominant_kernel"] = top.name
key["gpu_idle_pct"] = idle_pct
print(json.dumps(as_json(key), indent=2, sort_keys=True))
