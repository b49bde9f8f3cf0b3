"""RMSNorm with the row in registers: one read of x, one write of y.

Squares and their sum are float32 even for float16/bfloat16 inputs: a float16
input of 3000 squares to 9e6, far past float16's 65504.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_HIDDEN = 16384


@triton.jit
def _rmsnorm_kernel(
    x_ptr, w_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    # Padded lanes load 0 and add nothing to the sum of squares.
    mean_square = tl.sum(x * x, axis=0) / n_cols
    inv_rms = tl.rsqrt(mean_square + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * inv_rms * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _warps_for(block: int) -> int:
    if block <= 1024:
        return 4
    if block <= 4096:
        return 8
    return 16


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        if hidden > MAX_HIDDEN:
            raise ValueError(f"hidden size {hidden} exceeds {MAX_HIDDEN}")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        if x.stride(-1) != 1:
            x = x.contiguous()
        x2 = x.reshape(-1, n_cols)
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        y2 = y.view(-1, n_cols)
        n_rows = x2.shape[0]
        if n_rows == 0:
            return y
        block = triton.next_power_of_2(n_cols)
        _rmsnorm_kernel[(n_rows,)](
            x2,
            self.weight.detach(),
            y2,
            n_cols,
            x2.stride(0),
            y2.stride(0),
            self.eps,
            BLOCK=block,
            num_warps=_warps_for(block),
        )
        return y
