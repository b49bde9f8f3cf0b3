import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_fwd(inp, scale, outp, hidden, eps, CHUNK: tl.constexpr):
    # two sweeps per row: sum of squares, then scale; fp32 throughout
    r = tl.program_id(0)
    start = r.to(tl.int64) * hidden
    sq = tl.zeros((CHUNK,), dtype=tl.float32)
    for c in range(0, hidden, CHUNK):
        idx = c + tl.arange(0, CHUNK)
        v = tl.load(inp + start + idx, mask=idx < hidden, other=0.0).to(tl.float32)
        sq += v * v
    factor = tl.rsqrt(tl.sum(sq, axis=0) / hidden + eps)
    for c in range(0, hidden, CHUNK):
        idx = c + tl.arange(0, CHUNK)
        ok = idx < hidden
        v = tl.load(inp + start + idx, mask=ok, other=0.0).to(tl.float32)
        g = tl.load(scale + idx, mask=ok, other=0.0).to(tl.float32)
        tl.store(outp + start + idx, (v * factor * g).to(outp.dtype.element_ty), mask=ok)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = float(eps)

    def forward(self, x):
        hidden = x.shape[-1]
        src = x.contiguous()
        dst = torch.empty_like(src)
        rows = src.numel() // hidden
        _rmsnorm_fwd[(rows,)](src, self.weight, dst, hidden, self.eps, CHUNK=2048)
        return dst
