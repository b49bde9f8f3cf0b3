"""Reference: causal scaled-dot-product attention, forward (GPU MODE format).

O = softmax(Q K^T / sqrt(d) + M) V with M[i, j] = -inf for j > i, computed
eagerly in fp32 with the full score matrix materialised.
"""

import math

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# fp32 means fp32: keep cuBLAS from using TF32 for the reference matmuls.
torch.backends.cuda.matmul.allow_tf32 = False


def generate_input(
    batch: int, heads: int, seq: int, head_dim: int, dtype: str, q_scale: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q, k, v), each (batch, heads, seq, head_dim), contiguous.

    q is multiplied by q_scale: large values give logits in the hundreds, where
    an exponential without max subtraction overflows even in fp32.
    """
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    shape = (batch, heads, seq, head_dim)
    q, k, v = (torch.randn(shape, generator=gen, device=DEVICE) for _ in range(3))
    t = getattr(torch, dtype)
    return (q * q_scale).to(t), k.to(t), v.to(t)


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    seq, head_dim = q.shape[-2], q.shape[-1]
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) / math.sqrt(head_dim)
    future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v.float()).to(q.dtype)
