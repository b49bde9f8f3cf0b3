"""Derives this task's key from its trace with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import kernel_table, temporal_breakdown
from graders.profiling.keys import (
    common_figures,
    correlation_ids,
    kernel_rows,
    load_traces,
    planted,
    print_key,
)

(trace,) = load_traces()
top = kernel_table(trace)[0]
breakdown = temporal_breakdown(trace)
planted(breakdown.compute_pct > 90 and top.share_pct > 80, "a GPU busy with one dominant kernel")
print_key(
    {
        **common_figures(trace),
        "bottleneck": "compute_bound",
        "dominant_kernel_share_pct": top.share_pct,
        "compute_pct": breakdown.compute_pct,
        "evidence": correlation_ids(trace, kernel_rows(trace, name=top.name)),
        "fixes": ["faster_gemm"],
    }
)
