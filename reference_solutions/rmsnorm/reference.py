"""RMSNorm as written in Llama-style model code, evaluated in float32.

y = x / sqrt(mean(x^2) + eps) * weight, computed in float32 and rounded once to
the input dtype. `zero_rows` is the fraction of rows set to zero: their mean
square is 0 and only eps keeps the scale finite. The weight is a float32
parameter initialised near 1 so that a kernel that ignores it fails.
"""

import torch
import torch.nn as nn

batch_size = 4
seq_len = 2048
hidden = 4096
eps = 1e-6
dtype = "bfloat16"
scale = 1.0
zero_rows = 0.0

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        inv_rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x32 * inv_rms * self.weight.float()).to(x.dtype)


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(batch_size, seq_len, hidden, device=DEVICE) * scale
    if zero_rows > 0.0:
        zero = torch.rand(batch_size, seq_len, 1, device=DEVICE) < zero_rows
        x = x.masked_fill(zero, 0.0)
    return [x.to(getattr(torch, dtype))]


def get_init_inputs() -> list[object]:
    return [hidden, eps]
