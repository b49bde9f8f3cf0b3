"""Delayed-scaling e4m3 cast.

Launch 1 (single program): history max -> scale s, 1/s. Launch 2: per block,
the block's max |x| is folded into amax with atomic_max (values are >= 0, so
float max ordering is safe), and x * s is clamped to 448 and snapped to the
e4m3 grid. The grid step for |v| in [2^e, 2^(e+1)) is 2^(e-3) for e >= -6,
and 2^-9 below (subnormals); rounding to even uses rint via the magic
constant 2^23 + 2^22.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_from_history(hist, n_hist, s_out, s_inv_out, CH: tl.constexpr):
    biggest = tl.zeros([CH], dtype=tl.float32)
    for j in range(0, n_hist, CH):
        pos = j + tl.arange(0, CH)
        biggest = tl.maximum(biggest, tl.load(hist + pos, mask=pos < n_hist, other=0.0))
    hmax = tl.max(biggest, 0)
    s = 1.0
    if hmax > 0.0:
        s = 448.0 / hmax
    tl.store(s_out, s)
    tl.store(s_inv_out, 1.0 / s)


@triton.jit
def quantize_e4m3(x, y, s_ptr, amax, numel, CH: tl.constexpr):
    pos = tl.program_id(0).to(tl.int64) * CH + tl.arange(0, CH)
    valid = pos < numel
    v = tl.load(x + pos, mask=valid, other=0.0).to(tl.float32)
    tl.atomic_max(amax, tl.max(tl.abs(v), 0))
    scaled = tl.clamp(v * tl.load(s_ptr), -448.0, 448.0)
    mag = tl.abs(scaled)
    bits = mag.to(tl.uint32, bitcast=True)
    exp_field = (bits >> 23).to(tl.int32)
    e = tl.maximum(exp_field - 127, -6)
    grid_step = tl.exp2((e - 3).to(tl.float32))
    k = mag / grid_step
    k = (k + 12582912.0) - 12582912.0
    snapped = k * grid_step
    snapped = tl.where(scaled < 0.0, -snapped, snapped)
    tl.store(y + pos, snapped.to(tl.float8e4nv), mask=valid)


def custom_kernel(data):
    x, hist = data
    x = x.contiguous()
    s = torch.empty(1, device=x.device, dtype=torch.float32)
    s_inv = torch.empty(1, device=x.device, dtype=torch.float32)
    amax = torch.zeros(1, device=x.device, dtype=torch.float32)
    scale_from_history[(1,)](hist, hist.numel(), s, s_inv, CH=512)
    y = torch.empty_like(x, dtype=torch.float8_e4m3fn)
    CH = 8192
    quantize_e4m3[(triton.cdiv(x.numel(), CH),)](x, y, s, amax, x.numel(), CH=CH)
    return y, amax, s_inv
