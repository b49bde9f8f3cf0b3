"""Reference: scaled, causally masked softmax over attention logits (CPU).

y = softmax(scale * x + M) along the last dim, M[i, j] = -inf for j > i: the
eager PyTorch composition (scale, mask, softmax) that an attention layer
without a fused kernel runs.
"""

import torch
import torch.nn as nn

batch = 2
heads = 4
seq = 512
scale = 0.125
magnitude = 1.0  # multiplies x: large values need the max subtraction


class Model(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        return torch.softmax((x * self.scale).masked_fill(future, float("-inf")), dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch, heads, seq, seq) * magnitude]


def get_init_inputs() -> list:
    return [scale]
