"""SwiGLU that handles four rows per program but sizes the grid with floor division.

rows // ROWS_PER_PROGRAM drops the last rows whenever the row count is not a
multiple of four: those output rows are never written and hold whatever
torch.empty left there. Correct on tidy shapes, wrong on ragged ones.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
ROWS_PER_PROGRAM = 4


@triton.jit
def _swiglu_kernel(x_ptr, out_ptr, d, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    # No row bound: with a floor-divided grid every row a program sees exists.
    for i in range(ROWS):
        row = tl.program_id(0) * ROWS + i
        a = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
        gated = a / (1.0 + tl.exp(-a)) * b
        tl.store(out_ptr + row * d + cols, gated.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    x = x.contiguous()
    d = x.shape[-1] // 2
    rows = x.numel() // (2 * d)
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    grid = (rows // ROWS_PER_PROGRAM, triton.cdiv(d, BLOCK))
    _swiglu_kernel[grid](x, out, d, ROWS=ROWS_PER_PROGRAM, BLOCK=BLOCK)
    return out
