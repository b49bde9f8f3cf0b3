"""The fix: the whole vector in two operators."""

import torch


def step(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * scale + 1.0
