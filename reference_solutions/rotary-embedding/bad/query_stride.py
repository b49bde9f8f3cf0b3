"""Half-split rotary embedding that steps through tokens with a stride of heads * d.

The maths is right, and a test on a standalone (batch, seq, heads, d) query
tensor passes, but the input is packed QKV: a token's query and key sit
3 * heads * d apart from the next token's. From the second token on, this
reads the wrong slots (keys, values, other tokens).
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
    token_stride = heads * 2 * half  # the stride of a standalone q, not of packed qkv
    src = qkv_ptr + token * token_stride + (which * heads + h) * 2 * half
    x1 = tl.load(src + offs, mask=mask).to(tl.float32)
    x2 = tl.load(src + half + offs, mask=mask).to(tl.float32)
    dst = out_ptr + ((token * 2 + which) * heads + h) * 2 * half
    dtype = out_ptr.dtype.element_ty
    tl.store(dst + offs, (x1 * c - x2 * sn).to(dtype), mask=mask)
    tl.store(dst + half + offs, (x2 * c + x1 * sn).to(dtype), mask=mask)


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
