"""Derives this task's key from its trace with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import host_syncs, temporal_breakdown
from graders.profiling.keys import common_figures, load_traces, planted, print_key

(trace,) = load_traces()
syncs = host_syncs(trace)
planted(
    syncs.idle_after_us > 0.5 * temporal_breakdown(trace).idle_us,
    "synchronisations that idle the GPU",
)
print_key(
    {
        **common_figures(trace),
        "bottleneck": "host_sync",
        "syncs_per_step": syncs.count / len(trace.steps),
        "idle_after_syncs_us": syncs.idle_after_us,
        "evidence": [sync.ids[0] for sync in syncs.syncs],
        "fixes": ["remove_host_syncs"],
    }
)
