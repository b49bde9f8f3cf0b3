"""Fused GELU (tanh approximation): one read and one write per element.

0.5 * (1 + tanh(u)) equals sigmoid(2u), so y = x / (1 + exp(-2u)). That form
needs one exp, has no inf/inf for large positive x (exp(-2u) -> 0, y -> x) and
no cancellation in 1 + tanh(u) for very negative x (y -> -0.0).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 2048
NUM_WARPS = 8


@triton.jit
def _gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    # int64 offsets: large activations pass 2**31 elements.
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    # 2 * sqrt(2 / pi) = 1.5957691216057308
    two_u = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-two_u))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, BLOCK),)
        _gelu_tanh_kernel[grid](x, y, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return y
