"""Masked mean pooling of a padded batch: each sequence of ``x`` (batch, time,
features) is averaged over its first ``lengths[i]`` positions only.

One weight per (sequence, position) for the whole batch instead of a Python
loop: 1/lengths[i] on the valid positions, 0 on the padding. The weighted sum
is taken feature-major and the (batch, features) result returned as a view
of it (transposed, not copied): a few operators per call."""

import torch


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(x.shape[1], device=x.device)
    weights = (positions[None, :] < lengths[:, None]).to(x.dtype) / lengths[:, None].to(x.dtype)
    pooled = (x.permute(2, 0, 1) * weights).sum(dim=-1)  # (features, batch)
    return pooled.T
