"""Derives this task's key from its trace with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import dataloader_stalls, temporal_breakdown
from graders.profiling.keys import common_figures, load_traces, planted, print_key

(trace,) = load_traces()
stalls = dataloader_stalls(trace)
planted(
    stalls.gpu_idle_us > 0.5 * temporal_breakdown(trace).idle_us,
    "data-loader waits that idle the GPU",
)
print_key(
    {
        **common_figures(trace),
        "bottleneck": "data_loader",
        "loader_gpu_idle_us": stalls.gpu_idle_us,
        "evidence": [step.ids[0] for step in stalls.steps if step.gpu_idle_us > 0],
        "fixes": ["more_dataloader_workers"],
    }
)
