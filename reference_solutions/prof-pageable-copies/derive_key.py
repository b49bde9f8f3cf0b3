"""Derives this task's key from its trace with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import memcpy_summary, temporal_breakdown
from graders.profiling.keys import common_figures, load_traces, planted, print_key

(trace,) = load_traces()
copies = [g for g in memcpy_summary(trace) if g.kind == "DtoH" and g.memory == "pageable"]
planted(len(copies) == 1 and copies[0].bytes > 0, "device-to-host copies into pageable memory")
print_key(
    {
        **common_figures(trace),
        "bottleneck": "pageable_copies",
        "pageable_mib_per_step": copies[0].bytes / 2**20 / len(trace.steps),
        "memory_pct": temporal_breakdown(trace).memory_pct,
        "evidence": copies[0].ids,
        "fixes": ["pin_host_memory"],
    }
)
