"""Reference: rotary position embedding on a packed QKV tensor, half-split convention.

`qkv` is the output of a fused QKV projection, laid out (batch, seq, 3, heads,
head_dim). RoPE rotates the query and key parts; the values are not touched.
The rotation pairs element i with element i + head_dim/2 (GPT-NeoX / Llama).
"""

import torch
import torch.nn as nn

batch = 8
seq = 2048
heads = 32
head_dim = 128
dtype = "bfloat16"
base = 10000.0
scale = 1.0  # multiplies qkv: large magnitudes check that nothing overflows

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1 = x[..., :half].float()
    x2 = x[..., half:].float()
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class Model(nn.Module):
    def forward(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        q_rot = _rotate(qkv[:, :, 0], cos, sin)
        k_rot = _rotate(qkv[:, :, 1], cos, sin)
        return torch.stack([q_rot, k_rot], dim=2).to(qkv.dtype)


def rope_tables(n_pos: int, dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of shape (n_pos, dim // 2), fp32, for positions 0..n_pos-1."""
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = torch.outer(torch.arange(n_pos, dtype=torch.float64), inv_freq)
    return angles.cos().float(), angles.sin().float()


def get_inputs() -> list[torch.Tensor]:
    # Drawn on the device: the harness seeds every device's generator.
    qkv = torch.randn(batch, seq, 3, heads, head_dim, device=DEVICE) * scale
    qkv = qkv.to(getattr(torch, dtype))
    cos, sin = rope_tables(seq, head_dim, base)
    return [qkv, cos.to(DEVICE), sin.to(DEVICE)]


def get_init_inputs() -> list:
    return []
