"""LayerNorm with the whole row in registers: one read of x, one write of y.

Statistics are float32 whatever the input dtype, and two-pass (mean, then the
mean of squared deviations), never E[x^2] - E[x]^2, which cancels
catastrophically when |mean| >> std. The row is first shifted by its first
element: for rows far from zero, x - shift is exact (Sterbenz) and small, so the
mean of the shifted row and the deviations keep full float32 precision instead
of inheriting the rounding error of a large mean.
"""

import torch
import triton
import triton.language as tl

MAX_HIDDEN = 16384


@triton.jit
def _layernorm_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x_row = x_ptr + row * x_row_stride
    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    shift = tl.load(x_row).to(tl.float32)
    shifted = tl.where(mask, x - shift, 0.0)
    shifted_mean = tl.sum(shifted, axis=0) / n_cols
    centered = tl.where(mask, shifted - shifted_mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / n_cols
    rstd = tl.rsqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = centered * rstd * w + b
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _warps_for(block: int) -> int:
    if block <= 1024:
        return 4
    if block <= 4096:
        return 8
    return 16


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]) -> torch.Tensor:
    x, weight, bias, eps = data
    n_cols = x.shape[-1]
    if n_cols > MAX_HIDDEN:
        raise ValueError(f"hidden size {n_cols} exceeds {MAX_HIDDEN}")
    if x.stride(-1) != 1:
        x = x.contiguous()
    x2 = x.reshape(-1, n_cols)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    y2 = y.view(-1, n_cols)
    n_rows = x2.shape[0]
    if n_rows == 0:
        return y
    block = triton.next_power_of_2(n_cols)
    _layernorm_kernel[(n_rows,)](
        x2,
        weight.contiguous(),
        bias.contiguous(),
        y2,
        n_cols,
        x2.stride(0),
        y2.stride(0),
        eps,
        BLOCK=block,
        num_warps=_warps_for(block),
    )
    return y
