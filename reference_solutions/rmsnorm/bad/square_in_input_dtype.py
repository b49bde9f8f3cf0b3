"""RMSNorm that squares in the input dtype and only then accumulates in float32.

For float16 inputs of a few thousand, x * x overflows to inf (65504 is
float16's largest finite value), the mean square is inf, rsqrt(inf) is 0 and
the row comes out all zeros. Fine for float32 and for unit-scale inputs.
(Triton's interpreter does not emulate bfloat16 arithmetic, so on CPU hosts
the bfloat16 products are garbage as well and that shape fails too.)
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    square = x * x
    mean_square = tl.sum(square.to(tl.float32), axis=0) / n_cols
    inv_rms = tl.rsqrt(mean_square + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    y = x.to(tl.float32) * inv_rms * w
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        y = torch.empty_like(x)
        block = triton.next_power_of_2(n_cols)
        grid = (x.numel() // n_cols,)
        _rmsnorm_kernel[grid](x, self.weight.detach(), y, n_cols, self.eps, BLOCK=block)
        return y
