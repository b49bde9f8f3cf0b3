"""Derives this task's key from its trace with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import launch_delays
from graders.profiling.keys import common_figures, correlation_ids, load_traces, planted, print_key
from graders.profiling.trace import EventKind

(trace,) = load_traces()
launch = launch_delays(trace)
planted(launch.shorter_than_launch_pct > 50, "most kernels shorter than their launch")
shorter = [
    row
    for row in range(len(trace.kind))
    if trace.kind[row] == EventKind.KERNEL
    and trace.launch_row[row] >= 0
    and trace.dur_us[row] < trace.dur_us[trace.launch_row[row]]
]
print_key(
    {
        **common_figures(trace),
        "bottleneck": "host_launch_bound",
        "short_kernel_pct": launch.shorter_than_launch_pct,
        "evidence": correlation_ids(trace, shorter),
        "fixes": ["cuda_graphs", "fuse_small_kernels"],
    }
)
