import torch
import triton
import triton.language as tl


# Three launches and no atomics: (1) each block writes its max |x| to a
# scratch vector, (2) one program reduces that vector and the amax history into
# amax, scale and 1/scale, (3) the cast itself, which rounds to the e4m3 grid
# with floor(t + 0.5) corrected to even on exact ties.
@triton.jit
def block_absmax(x_ptr, part_ptr, total, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    vals = tl.load(x_ptr + offs, mask=offs < total, other=0.0).to(tl.float32)
    tl.store(part_ptr + pid, tl.max(tl.abs(vals), axis=0))


@triton.jit
def finish_stats(part_ptr, parts, hist_ptr, hist_len, amax_ptr, scale_ptr, inv_ptr, R: tl.constexpr):
    best = tl.zeros([R], tl.float32)
    for j in range(0, parts, R):
        k = j + tl.arange(0, R)
        best = tl.maximum(best, tl.load(part_ptr + k, mask=k < parts, other=0.0))
    older = tl.zeros([R], tl.float32)
    for j in range(0, hist_len, R):
        k = j + tl.arange(0, R)
        older = tl.maximum(older, tl.load(hist_ptr + k, mask=k < hist_len, other=0.0))
    hist_max = tl.max(older, axis=0)
    scale = 448.0 / hist_max if hist_max > 0 else 1.0
    tl.store(amax_ptr, tl.max(best, axis=0))
    tl.store(scale_ptr, scale)
    tl.store(inv_ptr, 1.0 / scale)


@triton.jit
def to_e4m3(x_ptr, out_ptr, scale_ptr, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    v = tl.load(x_ptr + offs, mask=ok, other=0.0).to(tl.float32) * tl.load(scale_ptr)
    v = tl.clamp(v, -448.0, 448.0)
    mag = tl.abs(v)
    e = tl.maximum(tl.floor(tl.log2(tl.maximum(mag, 1e-30))), -6.0)
    ulp = tl.exp2(e - 3.0)
    t = mag / ulp
    r = tl.floor(t + 0.5)
    tie_to_odd = (r - t == 0.5) & (r % 2 == 1)
    r = tl.where(tie_to_odd, r - 1.0, r)
    result = tl.where(v < 0, -r * ulp, r * ulp)
    tl.store(out_ptr + offs, result.to(tl.float8e4nv), mask=ok)


def custom_kernel(data):
    x, history = data
    x = x.contiguous()
    total = x.numel()
    BLOCK = 4096
    parts = triton.cdiv(total, BLOCK)
    scratch = torch.empty(parts, dtype=torch.float32, device=x.device)
    block_absmax[(parts,)](x, scratch, total, BLOCK=BLOCK)
    amax = torch.empty(1, dtype=torch.float32, device=x.device)
    scale = torch.empty(1, dtype=torch.float32, device=x.device)
    scale_inv = torch.empty(1, dtype=torch.float32, device=x.device)
    finish_stats[(1,)](scratch, parts, history, history.numel(), amax, scale, scale_inv, R=1024)
    out = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
    to_e4m3[(parts,)](x, out, scale, total, BLOCK=BLOCK)
    return out, amax, scale_inv
