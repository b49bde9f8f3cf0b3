import torch
import triton
import triton.language as tl


# Works on any row stride (x need not be contiguous along rows): a program
# handles one row and a block of d; silu is computed with exp of -|a| so the
# exponential never overflows:
#   a >= 0: a / (1 + e^-a);  a < 0: a * e^a / (1 + e^a)
@triton.jit
def silu_mul(x, out, d, x_rs, o_rs, BD: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    k = tl.program_id(1) * BD + tl.arange(0, BD)
    ok = k < d
    gate = tl.load(x + row * x_rs + k, mask=ok, other=0.0).to(tl.float32)
    up = tl.load(x + row * x_rs + d + k, mask=ok, other=0.0).to(tl.float32)
    e = tl.exp(-tl.abs(gate))
    sig = tl.where(gate >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    tl.store(out + row * o_rs + k, (gate * sig * up).to(out.dtype.element_ty), mask=ok)


def custom_kernel(data):
    x = data[0]
    d = x.shape[-1] // 2
    x2 = x.reshape(-1, 2 * d)
    out = torch.empty((x2.shape[0], d), dtype=x.dtype, device=x.device)
    BD = 512
    silu_mul[(x2.shape[0], triton.cdiv(d, BD))](x2, out, d, x2.stride(0), out.stride(0), BD=BD)
    return out.reshape(*x.shape[:-1], d)
