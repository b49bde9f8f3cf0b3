import torch
import triton
import triton.language as tl


# Flat elementwise kernel with a few autotuned block sizes. GELU(tanh) is
# evaluated as x * sigmoid(1.5957691216057308 * (x + 0.044715 x^3)), i.e.
# the tanh identity 0.5 (1 + tanh(u)) = sigmoid(2u); tl.sigmoid is stable for
# large |u| (no inf / inf).
@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 512}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["numel"],
)
@triton.jit
def gelu_approx(src, dst, numel, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    in_range = i < numel
    v = tl.load(src + i, mask=in_range, other=0.0).to(tl.float32)
    cube_term = v + 0.044715 * v * v * v
    res = v * tl.sigmoid(1.5957691216057308 * cube_term)
    tl.store(dst + i, res.to(dst.dtype.element_ty), mask=in_range)


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        src = x.contiguous()
        dst = torch.empty_like(src)
        numel = src.numel()
        gelu_approx[lambda meta: (triton.cdiv(numel, meta["BLOCK"]),)](src, dst, numel)
        return dst
