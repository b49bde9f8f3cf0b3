"""Masked mean pooling, vectorised with torch.func.vmap: the per-sequence
function (mask its own positions, sum, divide) is mapped over the batch in one
go; a handful of operators per call, no Python loop."""

import torch
from torch.func import vmap


def _one(xi: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    mask = (torch.arange(xi.shape[0], device=xi.device) < n).to(xi.dtype)
    return (xi * mask[:, None]).sum(dim=0) / n.to(xi.dtype)


_pool = vmap(_one)


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    return _pool(x, lengths)
