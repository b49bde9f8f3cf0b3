"""Blocked prefix sum that forgets the carry between blocks.

Each BLOCK of a row is scanned on its own and written out: right whenever a
row fits in one block, wrong from the second block on.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _scan_kernel(x_ptr, out_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, length, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < length
        vals = tl.load(x_ptr + row * length + offs, mask=mask, other=0.0).to(tl.float32)
        prefix = tl.cumsum(vals, axis=0)
        tl.store(out_ptr + row * length + offs, prefix.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        length = x.shape[-1]
        _scan_kernel[(x.numel() // length,)](x, out, length, BLOCK=BLOCK)
        return out
