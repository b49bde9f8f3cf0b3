"""Derives this task's answer key from its trace, with the conventions
statement.md states, using the platform's trace library (graders.profiling).
Run from the bundle's folder: python derive_key.py > key.json"""

import json
import sys
from pathlib import Path

from graders.profiling.analysis import (
    as_json,
    kernel_table,
    load_trace,
    memcpy_summary,
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


copies = [g for g in memcpy_summary(trace) if g.kind == "DtoH" and g.memory == "pageable"]
planted(len(copies) == 1 and copies[0].bytes > 0, "device-to-host copies into pageable memory")
key = {
    "bottleneck": "pageable_copies",
    "pageable_mib_per_step": copies[0].bytes / 2**20 / steps,
    "memory_pct": temporal_breakdown(trace).memory_pct,
    "evidence": copies[0].ids,
    "fixes": ["pin_host_memory"],
}

key["dominant_kernel"] = top.name
key["gpu_idle_pct"] = idle_pct
print(json.dumps(as_json(key), indent=2, sort_keys=True))
