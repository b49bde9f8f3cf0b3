"""Row-wise symmetric int8 quantisation.

One program per row. Sweep 1 finds max |x| in fp32; s = absmax / 127. Sweep 2
divides by s (as the reference does, so ties stay ties), rounds half to even
with the 1.5 * 2^23 trick (exact for |t| <= 127) and clamps. A zero row keeps
s = 0 and writes zeros instead of dividing.
"""

import torch
import triton
import triton.language as tl

ROUND_MAGIC = 12582912.0  # 1.5 * 2**23


@triton.jit
def quantize_rows(x_ptr, q_ptr, s_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    src = x_ptr + row * stride
    dst = q_ptr + row * n_cols
    peak = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        vals = tl.load(src + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        peak = tl.maximum(peak, tl.abs(vals))
    absmax = tl.max(peak, axis=0)
    scale = absmax / 127.0
    tl.store(s_ptr + row, scale)
    safe = tl.where(scale > 0.0, scale, 1.0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < n_cols
        vals = tl.load(src + cols, mask=inside, other=0.0).to(tl.float32)
        t = vals / safe
        r = (t + 12582912.0) - 12582912.0
        r = tl.minimum(tl.maximum(r, -127.0), 127.0)
        r = tl.where(scale > 0.0, r, 0.0)
        tl.store(dst + cols, r.to(tl.int8), mask=inside)


def custom_kernel(data):
    x = data
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int8, device=x.device)
    s = torch.empty(rows, dtype=torch.float32, device=x.device)
    block = min(4096, triton.next_power_of_2(cols))
    quantize_rows[(rows,)](x, q, s, cols, x.stride(0), BLOCK=block)
    return q, s
