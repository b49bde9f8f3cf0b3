"""Rotary position embedding (half-split) on packed QKV, in Triton.

One program handles one token and BLOCK_H heads of both the query and the
key: the token's cos/sin row is loaded once and reused for 2 * BLOCK_H head
vectors. Each head's two halves are loaded as separate tiles, rotated in fp32
and rounded once at the store. The values (third slot of qkv) are never
read. Memory-bound: q and k are read once and written once; the small tables
stay in L2.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

TILE_ELEMS = 2048  # elements per (q or k) tile; bounds the register tile


@triton.jit
def _rope_qk_kernel(
    qkv_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    heads,
    seq,
    half,
    stride_qb,
    stride_qs,
    stride_q3,
    stride_qh,
    stride_tab,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    token = tl.program_id(0)
    b = token // seq
    s = token % seq
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, BLOCK_D)  # index within one half; BLOCK_D >= half
    mask_d = offs_d < half
    mask = (offs_h[:, None] < heads) & mask_d[None, :]

    c = tl.load(cos_ptr + s * stride_tab + offs_d, mask=mask_d, other=0.0)[None, :]
    sn = tl.load(sin_ptr + s * stride_tab + offs_d, mask=mask_d, other=0.0)[None, :]
    dtype = out_ptr.dtype.element_ty

    # which = 0: query, 1: key. Output is contiguous (batch, seq, 2, heads, 2 * half).
    for which in tl.static_range(2):
        src = (
            qkv_ptr
            + b * stride_qb
            + s * stride_qs
            + which * stride_q3
            + offs_h[:, None] * stride_qh
            + offs_d[None, :]
        )
        x1 = tl.load(src, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(src + half, mask=mask, other=0.0).to(tl.float32)
        out_row = (token * 2 + which) * heads + offs_h[:, None]
        dst = out_ptr + out_row * (2 * half) + offs_d[None, :]
        tl.store(dst, (x1 * c - x2 * sn).to(dtype), mask=mask)
        tl.store(dst + half, (x2 * c + x1 * sn).to(dtype), mask=mask)


def apply_rope_qk(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    batch, seq, _, heads, head_dim = qkv.shape
    half = head_dim // 2
    out = torch.empty((batch, seq, 2, heads, head_dim), dtype=qkv.dtype, device=qkv.device)
    if out.numel() == 0:
        return out
    if qkv.stride(-1) != 1:
        qkv = qkv.contiguous()
    # The tables are small (seq x half); a no-op when already contiguous.
    cos, sin = cos.contiguous(), sin.contiguous()
    block_d = triton.next_power_of_2(half)
    block_h = max(1, min(triton.next_power_of_2(heads), TILE_ELEMS // (2 * block_d)))
    grid = (batch * seq, triton.cdiv(heads, block_h))
    _rope_qk_kernel[grid](
        qkv,
        cos,
        sin,
        out,
        heads,
        seq,
        half,
        qkv.stride(0),
        qkv.stride(1),
        qkv.stride(2),
        qkv.stride(3),
        cos.stride(0),
        BLOCK_H=block_h,
        BLOCK_D=block_d,
        num_warps=4,
    )
    return out


class ModelNew(nn.Module):
    def forward(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return apply_rope_qk(qkv, cos, sin)
