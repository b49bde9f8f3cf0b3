"""Reference: out-of-place 2D transpose, materialised contiguously."""

import torch
import torch.nn as nn

rows = 4096
cols = 8191
dtype = "float32"

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(0, 1).contiguous()


def get_inputs() -> list[torch.Tensor]:
    # Drawn on the device: the harness seeds every device's generator.
    return [torch.randn(rows, cols, dtype=getattr(torch, dtype), device=DEVICE)]


def get_init_inputs() -> list:
    return []
