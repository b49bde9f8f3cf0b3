"""FP8 (e4m3fn) cast with delayed scaling, rounding done by hand.

The interpreter's fp32 -> fp8 conversion neither rounds to nearest-even nor
saturates, so the kernel puts every value on the e4m3 grid itself: clamp to
+-448, take the binary exponent from the float's bits (at least -6, the
smallest normal exponent, below which the grid step stays 2^-9), and round
|v| / step to an integer with the 1.5 * 2^23 trick, which rounds half to even.
The result is exactly representable, so the final conversion is exact.
"""

import torch
import triton
import triton.language as tl

E4M3_MAX = 448.0


@triton.jit
def _history_scale(hist_ptr, H, scale_ptr, scale_inv_ptr, BLOCK: tl.constexpr):
    top = tl.zeros([BLOCK], tl.float32)
    for start in range(0, H, BLOCK):
        i = start + tl.arange(0, BLOCK)
        top = tl.maximum(top, tl.load(hist_ptr + i, mask=i < H, other=0.0))
    m = tl.max(top, axis=0)
    s = tl.where(m > 0.0, 448.0 / m, 1.0)
    tl.store(scale_ptr, s)
    tl.store(scale_inv_ptr, 1.0 / s)


@triton.jit
def _cast(x_ptr, y_ptr, scale_ptr, amax_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = i < n
    x = tl.load(x_ptr + i, mask=live, other=0.0).to(tl.float32)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(x), axis=0))
    v = tl.minimum(tl.maximum(x * tl.load(scale_ptr), -448.0), 448.0)
    a = tl.abs(v)
    exponent = ((a.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127
    exponent = tl.maximum(exponent, -6)
    step = ((exponent - 3 + 127) << 23).to(tl.float32, bitcast=True)
    units = (a / step + 12582912.0) - 12582912.0
    q = tl.where(v < 0, -units * step, units * step)
    tl.store(y_ptr + i, q.to(tl.float8e4nv), mask=live)


def custom_kernel(data):
    x, amax_history = data
    x = x.contiguous()
    dev = x.device
    scale = torch.empty(1, dtype=torch.float32, device=dev)
    scale_inv = torch.empty(1, dtype=torch.float32, device=dev)
    amax = torch.zeros(1, dtype=torch.float32, device=dev)
    _history_scale[(1,)](amax_history, amax_history.numel(), scale, scale_inv, BLOCK=1024)
    y = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=dev)
    n = x.numel()
    _cast[(triton.cdiv(n, 2048),)](x, y, scale, amax, n, BLOCK=2048)
    return y, amax, scale_inv
