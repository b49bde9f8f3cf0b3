import torch
import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


# tl.associative_scan with an explicit combine function, one row per program;
# rows longer than SEG are walked segment by segment with a carried offset.
@triton.jit
def prefix_sum_rows(inp, out, width, in_stride, out_stride, SEG: tl.constexpr):
    rid = tl.program_id(0).to(tl.int64)
    carried = 0.0
    for seg in range(0, width, SEG):
        pos = seg + tl.arange(0, SEG)
        inside = pos < width
        piece = tl.load(inp + rid * in_stride + pos, mask=inside, other=0.0).to(tl.float32)
        running = tl.associative_scan(piece, 0, _add) + carried
        tl.store(out + rid * out_stride + pos, running.to(out.dtype.element_ty), mask=inside)
        carried = carried + tl.sum(piece, 0)


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, width = x.shape
        result = torch.empty_like(x)
        seg = 2048 if width > 2048 else triton.next_power_of_2(width)
        prefix_sum_rows[(batch,)](x, result, width, x.stride(0), result.stride(0), SEG=seg)
        return result
