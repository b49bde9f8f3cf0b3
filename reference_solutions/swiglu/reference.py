"""SwiGLU gate: out = silu(a) * b, where x = [a | b] along the last dimension.

GPU MODE format. The reference evaluates in float32 and rounds once to the
input dtype, so float16/bfloat16 results are well defined.
"""

import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def generate_input(
    batch: int, seq: int, d: int, dtype: str, scale: float, seed: int
) -> tuple[torch.Tensor]:
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(batch, seq, 2 * d, device=DEVICE, generator=gen) * scale
    return (x.to(getattr(torch, dtype)),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    a, b = x.float().chunk(2, dim=-1)
    return (F.silu(a) * b).to(x.dtype)
