"""LayerNorm with the textbook one-pass variance, var = E[x^2] - E[x]^2, in float32.

Both terms are about mean^2; when |mean| >> std their difference is lost to
rounding (at mean 1000, std 1: E[x^2] ~ 1e6 with an error near 1, the size of
the variance itself). Fine on zero-mean data, wrong on offset rows.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.sum(x * x, axis=0) / n_cols - mean * mean
    rstd = tl.rsqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]) -> torch.Tensor:
    x, weight, bias, eps = data
    x = x.contiguous()
    n_cols = x.shape[-1]
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    _layernorm_kernel[(x.numel() // n_cols,)](x, weight, bias, y, n_cols, eps, BLOCK=block)
    return y
