import torch
import triton
import triton.language as tl


@triton.jit
def fused_sum_argmax(src, out_sum, out_arg, cols, stride, CH: tl.constexpr):
    # Chunk-level reduction: each chunk's max and first argmax (tl.argmax with
    # tie_break_left) is compared with the best so far with a strict '>', so
    # an earlier chunk wins ties; sums accumulate in fp32.
    r = tl.program_id(0)
    row_ptr = src + r.to(tl.int64) * stride
    acc = tl.zeros([], tl.float32)
    top = tl.full([], float("-inf"), tl.float32)
    where = tl.zeros([], tl.int64)
    for c in range(0, cols, CH):
        k = c + tl.arange(0, CH)
        chunk = tl.load(row_ptr + k, mask=k < cols, other=float("-inf")).to(tl.float32)
        acc += tl.sum(tl.where(k < cols, chunk, 0.0), axis=0)
        m, i = tl.max(chunk, axis=0, return_indices=True, return_indices_tie_break_left=True)
        if m > top:
            top = m
            where = (c + i).to(tl.int64)
    tl.store(out_sum + r, acc.to(out_sum.dtype.element_ty))
    tl.store(out_arg + r, where)


def custom_kernel(data):
    x = data[0]
    rows, cols = x.shape
    s = torch.empty(rows, device=x.device, dtype=x.dtype)
    a = torch.empty(rows, device=x.device, dtype=torch.int64)
    fused_sum_argmax[(rows,)](x, s, a, cols, x.stride(0), CH=2048, num_warps=8)
    return s, a
