import torch
import triton
import triton.language as tl


# One program per token: a (2 * heads, half) tile covers the token's query and
# key heads at once, so cos/sin are loaded once per token and broadcast.
@triton.jit
def rotate_token(qkv, cos, sin, out, S, H, half,
                 ROWS: tl.constexpr, COLS: tl.constexpr):
    tok = tl.program_id(0).to(tl.int64)
    pos = tok % S
    r = tl.arange(0, ROWS)  # 0..2H-1: q heads then k heads
    c = tl.arange(0, COLS)
    rmask = r < 2 * H
    cmask = c < half
    full = rmask[:, None] & cmask[None, :]
    dim = 2 * half
    in_rows = tok * 3 * H * dim + r * dim
    out_rows = tok * 2 * H * dim + r * dim
    lo = tl.load(qkv + in_rows[:, None] + c[None, :], mask=full, other=0.0).to(tl.float32)
    hi = tl.load(qkv + in_rows[:, None] + half + c[None, :], mask=full, other=0.0).to(tl.float32)
    cs = tl.load(cos + pos * half + c, mask=cmask, other=0.0)[None, :]
    sn = tl.load(sin + pos * half + c, mask=cmask, other=0.0)[None, :]
    tl.store(out + out_rows[:, None] + c[None, :], (lo * cs - hi * sn).to(out.dtype.element_ty), mask=full)
    tl.store(out + out_rows[:, None] + half + c[None, :], (hi * cs + lo * sn).to(out.dtype.element_ty), mask=full)


class ModelNew(torch.nn.Module):
    def forward(self, qkv, cos, sin):
        B, S, three, H, D = qkv.shape
        src = qkv.contiguous()
        result = torch.empty(B, S, 2, H, D, dtype=qkv.dtype, device=qkv.device)
        rotate_token[(B * S,)](src, cos, sin, result, S, H, D // 2,
                               ROWS=triton.next_power_of_2(2 * H), COLS=triton.next_power_of_2(D // 2))
        return result
