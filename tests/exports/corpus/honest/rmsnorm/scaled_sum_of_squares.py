"""RMSNorm with a pre-scaled sum of squares.

x can reach 3000 in fp16, whose square is fine in fp32 but the sum over 4099
elements of 9e6 is also fine in fp32; still, the row is scaled by 1/absmax
before squaring so even extreme rows keep full precision, and the scale is
folded back afterwards. All-zero rows: absmax 0 -> divide by 1 instead,
mean square 0, output 0 * w.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_rows(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    peak = tl.max(tl.abs(x), axis=0)
    unit = tl.where(peak > 0.0, peak, 1.0)
    xs = x / unit
    mean_sq = tl.sum(xs * xs, axis=0) / n_cols * unit * unit
    inv_rms = 1.0 / tl.sqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1]).contiguous()
        out = torch.empty_like(flat)
        block = triton.next_power_of_2(shape[-1])
        rms_norm_rows[(flat.shape[0],)](flat, self.weight, out, shape[-1], self.eps, BLOCK=block,
                                        num_warps=8 if block >= 4096 else 4)
        return out.view(shape)
