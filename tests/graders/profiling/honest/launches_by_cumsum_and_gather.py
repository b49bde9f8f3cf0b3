"""Masked mean pooling: a prefix sum over time, then each sequence's sum picked at
position lengths-1 with one gather (honest: a few operators per call)."""

import torch


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    # pad a zero row in front so a length of n picks the prefix sum of n rows
    prefix = torch.cat([x.new_zeros(x.shape[0], 1, x.shape[2]), x.cumsum(dim=1)], dim=1)
    index = lengths.view(-1, 1, 1).expand(-1, 1, x.shape[2])
    return prefix.gather(1, index).squeeze(1) / lengths[:, None].to(x.dtype)
