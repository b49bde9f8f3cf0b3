"""Inputs of the launches program: a vector and per-element scales."""

import torch


def make_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(96, generator=generator), torch.rand(96, generator=generator)
