"""EmbeddingBag whose mean mode divides by the raw bag size.

Sum mode and every non-empty bag are right; an empty bag in mean mode computes
0 / 0 and stores NaN where torch returns zeros.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _embedding_bag_kernel(
    weight_ptr,
    indices_ptr,
    offsets_ptr,
    out_ptr,
    num_bags,
    total,
    dim,
    MEAN: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    bag = tl.program_id(0)
    offs_d = tl.arange(0, BLOCK_D)
    mask_d = offs_d < dim
    start = tl.load(offsets_ptr + bag)
    end = tl.load(offsets_ptr + bag + 1, mask=bag + 1 < num_bags, other=total)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in range(start, end):
        row = tl.load(indices_ptr + i)
        acc += tl.load(weight_ptr + row * dim + offs_d, mask=mask_d, other=0.0).to(tl.float32)
    if MEAN:
        acc = acc / (end - start).to(tl.float32)
    tl.store(out_ptr + bag * dim + offs_d, acc.to(out_ptr.dtype.element_ty), mask=mask_d)


def custom_kernel(data):
    weight, indices, offsets, mode = data
    weight = weight.contiguous()
    num_bags, dim = offsets.numel(), weight.shape[1]
    out = torch.empty((num_bags, dim), dtype=weight.dtype, device=weight.device)
    _embedding_bag_kernel[(num_bags,)](
        weight,
        indices,
        offsets,
        out,
        num_bags,
        indices.numel(),
        dim,
        MEAN=mode == "mean",
        BLOCK_D=triton.next_power_of_2(dim),
    )
    return out
