"""Half-split RoPE over packed QKV, tiles of (positions x half-dim).

Program (b, block of positions, q/k * heads) handles BS positions of one head
of the query or the key: cos/sin tiles (BS, half) are loaded once and reused
for both halves. Strides come from the tensors so nothing is assumed beyond
the documented (b, s, 3, h, d) layout.
"""

import torch
from torch import nn
import triton
import triton.language as tl


@triton.jit
def rope_tiles(qkv, cos, sin, out, S, HALF_D,
               q_sb, q_ss, q_st, q_sh, o_sb, o_ss, o_st, o_sh, n_heads,
               BS: tl.constexpr, BH: tl.constexpr):
    b = tl.program_id(0)
    spos = tl.program_id(1) * BS + tl.arange(0, BS)
    th = tl.program_id(2)
    part = th // n_heads  # 0 = query, 1 = key
    head = th % n_heads
    hd = tl.arange(0, BH)
    ok = (spos[:, None] < S) & (hd[None, :] < HALF_D)
    src = qkv + b * q_sb + spos[:, None] * q_ss + part * q_st + head * q_sh + hd[None, :]
    dst = out + b * o_sb + spos[:, None] * o_ss + part * o_st + head * o_sh + hd[None, :]
    first = tl.load(src, mask=ok, other=0.0).to(tl.float32)
    second = tl.load(src + HALF_D, mask=ok, other=0.0).to(tl.float32)
    trig = spos[:, None] * HALF_D + hd[None, :]
    cs = tl.load(cos + trig, mask=ok, other=0.0)
    sn = tl.load(sin + trig, mask=ok, other=0.0)
    tl.store(dst, (first * cs - second * sn).to(out.dtype.element_ty), mask=ok)
    tl.store(dst + HALF_D, (second * cs + first * sn).to(out.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, S, _, H, D = qkv.shape
        qkv = qkv.contiguous()
        out = torch.empty((B, S, 2, H, D), device=qkv.device, dtype=qkv.dtype)
        BS = 16
        grid = (B, triton.cdiv(S, BS), 2 * H)
        rope_tiles[grid](qkv, cos, sin, out, S, D // 2, *qkv.stride()[:4], *out.stride()[:4], H,
                         BS=BS, BH=triton.next_power_of_2(D // 2))
        return out
