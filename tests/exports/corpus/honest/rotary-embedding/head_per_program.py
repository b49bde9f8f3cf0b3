"""RoPE (half-split) on packed QKV: one program per (token, q-or-k, head).

The program loads the two halves of the head vector, the token's cos/sin rows,
and writes [x1 cos - x2 sin, x2 cos + x1 sin] into the (b, s, 2, h, d) output.
head_dim need not be a power of two: the half index is masked.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_kernel(qkv_ptr, cos_ptr, sin_ptr, out_ptr, seq, heads, HALF: tl.constexpr, half, BLOCK: tl.constexpr):
    token = tl.program_id(0)  # b * seq + s
    which = tl.program_id(1)  # 0: query, 1: key
    head = tl.program_id(2)
    s = token % seq
    d = 2 * half
    i = tl.arange(0, BLOCK)
    ok = i < half
    src = qkv_ptr + ((token.to(tl.int64) * 3 + which) * heads + head) * d
    dst = out_ptr + ((token.to(tl.int64) * 2 + which) * heads + head) * d
    x1 = tl.load(src + i, mask=ok, other=0.0).to(tl.float32)
    x2 = tl.load(src + half + i, mask=ok, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + s * half + i, mask=ok, other=0.0)
    sn = tl.load(sin_ptr + s * half + i, mask=ok, other=0.0)
    tl.store(dst + i, (x1 * c - x2 * sn).to(out_ptr.dtype.element_ty), mask=ok)
    tl.store(dst + half + i, (x2 * c + x1 * sn).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, qkv, cos, sin):
        qkv = qkv.contiguous()
        b, s, _, h, d = qkv.shape
        out = torch.empty((b, s, 2, h, d), dtype=qkv.dtype, device=qkv.device)
        half = d // 2
        block = triton.next_power_of_2(half)
        rope_kernel[(b * s, 2, h)](qkv, cos.contiguous(), sin.contiguous(), out, s, h, block, half, BLOCK=block)
        return out
