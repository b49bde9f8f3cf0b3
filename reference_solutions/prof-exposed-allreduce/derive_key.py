"""Derives this task's key from its trace with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import comm_comp_overlap, temporal_breakdown
from graders.profiling.keys import (
    common_figures,
    correlation_ids,
    kernel_rows,
    load_traces,
    planted,
    print_key,
)
from graders.profiling.trace import EventKind

(trace,) = load_traces()
overlap = comm_comp_overlap(trace)
planted(
    overlap.overlap_pct is not None and overlap.overlap_pct < 10,
    "an all-reduce that compute does not hide",
)
print_key(
    {
        **common_figures(trace),
        "bottleneck": "exposed_communication",
        "communication_pct": temporal_breakdown(trace).communication_pct,
        "comm_overlap_pct": overlap.overlap_pct,
        "evidence": correlation_ids(trace, kernel_rows(trace, EventKind.COMM_KERNEL)),
        "fixes": ["overlap_communication"],
    }
)
