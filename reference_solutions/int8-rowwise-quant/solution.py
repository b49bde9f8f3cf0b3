"""Per-row symmetric int8 quantization in Triton (GPU MODE format).

One program per row, two passes over it in BLOCK-wide chunks: the first finds
the row's absmax, the second quantizes. For the usual hidden sizes the second
pass reads the row back from L1/L2, so DRAM sees one read of x, one write of q
and four bytes of scale per row.

Rounding: torch.round rounds half to even. libdevice's rint does that on the
GPU but is not available under Triton's CPU interpreter, so the kernel uses
the classic magic-number trick instead: adding and subtracting 1.5 * 2^23 in
fp32 leaves the nearest integer (ties to even) for any |t| < 2^22; here
|t| <= 127.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
ROUND_MAGIC = 12582912.0  # 1.5 * 2^23: the fp32 spacing there is exactly 1


@triton.jit
def _quantize_rows_kernel(
    x_ptr,
    q_ptr,
    scale_ptr,
    cols,
    stride_x,
    stride_q,
    BLOCK: tl.constexpr,
    ROUND_MAGIC: tl.constexpr,
):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    q_row = q_ptr + row.to(tl.int64) * stride_q

    absmax = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=0.0).to(tl.float32)
        absmax = tl.maximum(absmax, tl.abs(x))
    scale = tl.max(absmax, axis=0) / 127.0
    tl.store(scale_ptr + row, scale)
    # An all-zero row keeps scale 0; dividing by 1 then yields q = 0, not NaN.
    divisor = tl.where(scale > 0.0, scale, 1.0)

    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        t = x / divisor
        t = (t + ROUND_MAGIC) - ROUND_MAGIC
        t = tl.minimum(tl.maximum(t, -127.0), 127.0)
        tl.store(q_row + offs, t.to(tl.int8), mask=mask)


def custom_kernel(data: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = data if data.stride(-1) == 1 else data.contiguous()
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    scale = torch.empty((rows,), dtype=torch.float32, device=x.device)
    if rows == 0:
        return q, scale
    block = min(BLOCK, triton.next_power_of_2(max(cols, 1)))
    _quantize_rows_kernel[(rows,)](
        x,
        q,
        scale,
        cols,
        x.stride(0),
        q.stride(0),
        BLOCK=block,
        ROUND_MAGIC=ROUND_MAGIC,
        num_warps=4,
    )
    return q, scale
