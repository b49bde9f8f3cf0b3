"""Softmax over the last dimension of a 2-D tensor (PyTorch's fused kernel).

`masked` is the fraction of entries set to -inf, as in attention masks; one
entry per row always stays finite, so every row has a well-defined softmax.
"""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4099
dtype = "float32"
scale = 1.0
masked = 0.0

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(batch_size, dim, device=DEVICE) * scale
    if masked > 0.0:
        drop = torch.rand(batch_size, dim, device=DEVICE) < masked
        keep = torch.randint(0, dim, (batch_size, 1), device=DEVICE)
        drop.scatter_(1, keep, False)
        x = x.masked_fill(drop, float("-inf"))
    return [x.to(getattr(torch, dtype))]


def get_init_inputs() -> list[object]:
    return []
