"""Derives this task's key from its traces with the conventions statement.md states,
using the platform's trace library. From the bundle's folder:
python derive_key.py > key.json"""

from graders.profiling.analysis import kernel_table, stragglers
from graders.profiling.keys import (
    common_figures,
    correlation_ids,
    kernel_rows,
    load_traces,
    planted,
    print_key,
)

traces = load_traces()
imbalance = stragglers(traces)
rank = imbalance.straggler_rank
planted(rank is not None and imbalance.delay_us > 100, "one rank that the other waits for")
slow = traces[rank]
print_key(
    {
        **common_figures(traces[0]),
        "bottleneck": "load_imbalance",
        "straggler_rank": rank,
        "straggler_delay_us": imbalance.delay_us,
        "evidence": correlation_ids(
            slow, kernel_rows(slow, name=kernel_table(slow)[0].name), prefix=f"rank{rank}/"
        ),
        "fixes": ["rebalance_ranks"],
    }
)
