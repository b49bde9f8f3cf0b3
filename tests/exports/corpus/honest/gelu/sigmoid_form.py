"""GELU, tanh approximation, in one pass.

0.5 * x * (1 + tanh(z)) equals x * sigmoid(2z) = x / (1 + exp(-2z)), which
never divides infinity by infinity: for large |x| exp(-2z) is 0 or +inf and
the quotient is x or -0. Math in fp32, one rounding at the store.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SQRT_2_OVER_PI = 0.7978845608028654


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-2.0 * z))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_elements = x.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
        gelu_tanh_kernel[grid](x, y, n_elements, BLOCK_SIZE=1024)
        return y
