"""Linear layer followed by exact (erf) GELU, in half precision.

y = gelu(x @ W^T + b) with W: [out_features, in_features] as nn.Linear stores
it. PyTorch runs the matmul (float32 accumulation inside cuBLAS / the CPU
GEMM), rounds to the input dtype, then runs GELU as a second kernel.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
in_features = 4096
out_features = 4096
dtype = "float16"
scale = 1.0

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x))


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(batch_size, in_features, device=DEVICE) * scale
    return [x.to(getattr(torch, dtype))]


def get_init_inputs() -> list[object]:
    return [in_features, out_features, dtype]
