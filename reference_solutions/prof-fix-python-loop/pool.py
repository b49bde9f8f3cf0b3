"""Masked mean pooling of a padded batch: each sequence of ``x`` (batch, time,
features) is averaged over its first ``lengths[i]`` positions only."""

import torch


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    pooled = torch.empty(x.shape[0], x.shape[2], dtype=x.dtype)
    for i in range(x.shape[0]):
        n = int(lengths[i])
        pooled[i] = x[i, :n].sum(dim=0) / n
    return pooled
