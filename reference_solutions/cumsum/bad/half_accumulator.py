"""Blocked scan that accumulates in the input dtype.

For fp32 inputs this is a correct scan. For fp16 the partial sums are fp16:
once they reach a few thousand, an fp16 step is 2 or 4, small addends are
rounded away and a long row of positive values drifts far outside the
tolerance.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _scan_kernel(x_ptr, out_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros((), dtype=x_ptr.dtype.element_ty)
    for start in range(0, length, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < length
        vals = tl.load(x_ptr + row * length + offs, mask=mask, other=0.0)
        prefix = tl.cumsum(vals, axis=0) + carry
        tl.store(out_ptr + row * length + offs, prefix, mask=mask)
        carry = carry + tl.sum(vals, axis=0)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        length = x.shape[-1]
        _scan_kernel[(x.numel() // length,)](x, out, length, BLOCK=BLOCK)
        return out
