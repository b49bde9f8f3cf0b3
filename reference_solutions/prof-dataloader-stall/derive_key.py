"""Derives this task's answer key from its trace, with the conventions
statement.md states, using the platform's trace library (graders.profiling).
Run from the bundle's folder: python derive_key.py > key.json"""

import json
import sys
from pathlib import Path

from graders.profiling.analysis import (
    as_json,
    dataloader_stalls,
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


stalls = dataloader_stalls(trace)
planted(
    stalls.gpu_idle_us > 0.5 * temporal_breakdown(trace).idle_us,
    "data-loader waits that idle the GPU",
)
key = {
    "bottleneck": "data_loader",
    "loader_gpu_idle_us": stalls.gpu_idle_us,
    "evidence": [step.ids[0] for step in stalls.steps if step.gpu_idle_us > 0],
    "fixes": ["more_dataloader_workers"],
}

key["dominant_kernel"] = top.name
key["gpu_idle_pct"] = idle_pct
print(json.dumps(as_json(key), indent=2, sort_keys=True))
