import torch
import triton
import triton.language as tl


# Rows of `hidden` elements, whole row per program when hidden <= 8192 (a
# power-of-two register tile), otherwise two chunked sweeps. The mean square
# is accumulated in fp32 from fp32 values, so 3000^2 in fp16 inputs is fine.
@triton.jit
def rms_norm_kernel(x, g, y, hidden, eps, HP: tl.constexpr, SINGLE: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * hidden
    if SINGLE:
        k = tl.arange(0, HP)
        v = tl.load(x + r + k, mask=k < hidden, other=0.0).to(tl.float32)
        ms = tl.sum(v * v, axis=0) / hidden
        out = v / tl.sqrt(ms + eps) * tl.load(g + k, mask=k < hidden, other=0.0)
        tl.store(y + r + k, out.to(y.dtype.element_ty), mask=k < hidden)
    else:
        squares = tl.zeros([HP], tl.float32)
        for c in range(0, hidden, HP):
            k = c + tl.arange(0, HP)
            v = tl.load(x + r + k, mask=k < hidden, other=0.0).to(tl.float32)
            squares += v * v
        denom = tl.sqrt(tl.sum(squares, axis=0) / hidden + eps)
        for c in range(0, hidden, HP):
            k = c + tl.arange(0, HP)
            v = tl.load(x + r + k, mask=k < hidden, other=0.0).to(tl.float32)
            out = v / denom * tl.load(g + k, mask=k < hidden, other=0.0)
            tl.store(y + r + k, out.to(y.dtype.element_ty), mask=k < hidden)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        xc = x.contiguous()
        y = torch.empty_like(xc)
        single = hidden <= 8192
        hp = triton.next_power_of_2(hidden) if single else 4096
        rms_norm_kernel[(xc.numel() // hidden,)](xc, self.weight, y, hidden, self.eps, HP=hp, SINGLE=single)
        return y
