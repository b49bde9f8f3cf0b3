"""Vectorised, but averages over the padding too."""

import torch


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    return x.mean(dim=1)
