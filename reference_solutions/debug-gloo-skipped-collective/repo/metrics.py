"""Evaluation metrics reduced across the ranks of a ``torch.distributed`` job.

Every rank evaluates its own shard of the validation set and calls these with
what it computed; every rank gets the metric of the whole set back.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def global_mean(values: torch.Tensor) -> float:
    """The mean of every rank's ``values`` taken together.

    Shards may hold different numbers of examples, so the mean is the global sum
    over the global count, not a mean of the ranks' means. NaN when no rank holds
    any value.
    """
    if values.numel() == 0:
        # Nothing to contribute on this rank.
        return float("nan")
    stats = torch.stack(
        [values.sum(dtype=torch.float64), torch.tensor(values.numel(), dtype=torch.float64)]
    )
    dist.all_reduce(stats, op=dist.ReduceOp.SUM)
    return (stats[0] / stats[1]).item()


def global_max(values: torch.Tensor) -> float:
    """The largest value on any rank (-inf when no rank holds any value)."""
    if values.numel():
        local = values.max().to(torch.float64).reshape(1)
    else:
        local = torch.full((1,), -torch.inf, dtype=torch.float64)
    dist.all_reduce(local, op=dist.ReduceOp.MAX)
    return local.item()
