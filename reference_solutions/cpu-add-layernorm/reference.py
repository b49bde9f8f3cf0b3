"""Residual add followed by LayerNorm, on the CPU: norm(x + residual).

PyTorch materialises x + residual as a temporary, then LayerNorm reads it
back and writes the output: two full passes and one extra allocation.

`offset` shifts the residual stream away from zero (|mean| >> std);
`cancel_rows` is the fraction of rows where residual = -x exactly, so the sum
is all zeros, its variance is 0 and only eps keeps the scale finite.
"""

import torch
import torch.nn as nn

batch_size = 2048
hidden = 2048
eps = 1e-5
offset = 0.0
cancel_rows = 0.0

DEVICE = "cpu"


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual)


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(batch_size, hidden, device=DEVICE)
    residual = torch.randn(batch_size, hidden, device=DEVICE) + offset
    if cancel_rows > 0.0:
        cancel = torch.rand(batch_size, 1, device=DEVICE) < cancel_rows
        residual = torch.where(cancel, -x, residual)
    return [x, residual]


def get_init_inputs() -> list[object]:
    return [hidden, eps]
