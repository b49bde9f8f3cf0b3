"""Reference: EmbeddingBag forward, sum or mean, with offsets (GPU MODE format).

Bags are ragged and some are empty; an empty bag yields zeros in both modes.
torch accumulates fp16/bf16 rows in fp32 and rounds once to the weight dtype.
"""

import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def generate_input(
    num_embeddings: int,
    dim: int,
    num_bags: int,
    max_bag: int,
    mode: str,
    dtype: str,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """(weight, indices, offsets, mode).

    Bag sizes are uniform in [0, max_bag], and bags 2, 7, 12, ... are empty.
    offsets[b] is where bag b starts in indices (no trailing end offset: the
    last bag runs to the end of indices). Indices repeat freely.
    """
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    weight = torch.randn(num_embeddings, dim, generator=gen, device=DEVICE)
    sizes = torch.randint(0, max_bag + 1, (num_bags,), generator=gen, device=DEVICE)
    sizes[2::5] = 0
    offsets = torch.cumsum(sizes, 0) - sizes
    total = int(sizes.sum())
    indices = torch.randint(0, num_embeddings, (total,), generator=gen, device=DEVICE)
    return weight.to(getattr(torch, dtype)), indices, offsets, mode


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, str]) -> torch.Tensor:
    weight, indices, offsets, mode = data
    return F.embedding_bag(indices, weight, offsets, mode=mode)
