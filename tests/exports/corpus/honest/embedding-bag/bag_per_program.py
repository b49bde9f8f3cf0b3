"""EmbeddingBag (sum / mean): one program per (bag, block of columns).

A bag's range is [offsets[b], offsets[b + 1]) (the last one ends at the number
of indices); the loop gathers rows of the table one index at a time and sums
them in fp32. An empty bag stores zeros; mean divides by max(count, 1).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _bag_kernel(weight, indices, offsets, out, num_bags, total, dim,
                MEAN: tl.constexpr, BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    col_ok = cols < dim
    first = tl.load(offsets + bag)
    last = tl.where(bag + 1 < num_bags, tl.load(offsets + bag + 1, mask=bag + 1 < num_bags), total)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for i in range(first, last):
        idx = tl.load(indices + i)
        acc += tl.load(weight + idx * dim + cols, mask=col_ok, other=0.0).to(tl.float32)
    if MEAN:
        acc = acc / tl.maximum(last - first, 1).to(tl.float32)
    tl.store(out + bag.to(tl.int64) * dim + cols, acc.to(out.dtype.element_ty), mask=col_ok)


def custom_kernel(data):
    weight, indices, offsets, mode = data
    num_bags = offsets.numel()
    dim = weight.shape[1]
    out = torch.empty((num_bags, dim), dtype=weight.dtype, device=weight.device)
    block_d = min(256, triton.next_power_of_2(dim))
    grid = (num_bags, triton.cdiv(dim, block_d))
    _bag_kernel[grid](
        weight, indices, offsets, out, num_bags, indices.numel(), dim,
        MEAN=(mode == "mean"), BLOCK_D=block_d,
    )
    return out
