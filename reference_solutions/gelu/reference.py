"""GELU (tanh approximation) written the way GPT-2-style model code writes it.

The expression is evaluated in float32 and rounded once to the input dtype, so
the reference is well defined for float16 inputs too. Each PyTorch operator is
its own pass over memory: this is the unfused baseline a kernel is timed
against.
"""

import math

import torch
import torch.nn as nn

batch_size = 4096
dim = 16384
dtype = "float32"
scale = 1.0

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        inner = math.sqrt(2.0 / math.pi) * (x32 + 0.044715 * torch.pow(x32, 3.0))
        return (0.5 * x32 * (1.0 + torch.tanh(inner))).to(x.dtype)


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(batch_size, dim, device=DEVICE) * scale
    return [x.to(getattr(torch, dtype))]


def get_init_inputs() -> list[object]:
    return []
