"""Inputs of the host-sync program: a batch and four layers' weights."""

import torch


def make_inputs(seed: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 64, generator=generator)
    weights = [torch.randn(64, 64, generator=generator) / 8 for _ in range(4)]
    return x, weights
