"""Rotary embedding with the interleaved (GPT-J) pairing.

Rotates (x[2i], x[2i+1]) instead of (x[i], x[i + d/2]): a valid RoPE variant,
but not the half-split convention the task asks for, so the output is wrong
everywhere except position 0 (where the rotation is the identity).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rope_kernel(qkv_ptr, cos_ptr, sin_ptr, out_ptr, seq, heads, half, BLOCK_D: tl.constexpr):
    token = tl.program_id(0)
    h = tl.program_id(1)
    which = tl.program_id(2)
    s = token % seq
    offs = tl.arange(0, BLOCK_D)
    mask = offs < half
    c = tl.load(cos_ptr + s * half + offs, mask=mask)
    sn = tl.load(sin_ptr + s * half + offs, mask=mask)
    src = qkv_ptr + ((token * 3 + which) * heads + h) * 2 * half
    xe = tl.load(src + 2 * offs, mask=mask).to(tl.float32)
    xo = tl.load(src + 2 * offs + 1, mask=mask).to(tl.float32)
    dst = out_ptr + ((token * 2 + which) * heads + h) * 2 * half
    dtype = out_ptr.dtype.element_ty
    tl.store(dst + 2 * offs, (xe * c - xo * sn).to(dtype), mask=mask)
    tl.store(dst + 2 * offs + 1, (xo * c + xe * sn).to(dtype), mask=mask)


class ModelNew(nn.Module):
    def forward(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        qkv = qkv.contiguous()
        batch, seq, _, heads, head_dim = qkv.shape
        out = torch.empty((batch, seq, 2, heads, head_dim), dtype=qkv.dtype, device=qkv.device)
        half = head_dim // 2
        cos, sin = cos.contiguous(), sin.contiguous()
        _rope_kernel[(batch * seq, heads, 2)](
            qkv, cos, sin, out, seq, heads, half, BLOCK_D=triton.next_power_of_2(half)
        )
        return out
