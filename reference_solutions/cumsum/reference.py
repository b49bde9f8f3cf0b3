"""Reference: inclusive prefix sum along the last dimension.

torch.cumsum accumulates fp16/bf16 inputs in fp32 and returns the input dtype.
"""

import torch
import torch.nn as nn

batch = 16
length = 262147
dtype = "float32"
offset = 0.0  # added to every element: a positive drift makes partial sums large

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    # Drawn on the device: the harness seeds every device's generator.
    x = torch.randn(batch, length, device=DEVICE) + offset
    return [x.to(getattr(torch, dtype))]


def get_init_inputs() -> list:
    return []
