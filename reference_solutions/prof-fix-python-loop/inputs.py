"""A padded batch of sequences and their true lengths, from a seed."""

import torch

BATCH, TIME, FEATURES = 96, 40, 32


def make_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, TIME, FEATURES, generator=generator)
    lengths = torch.randint(1, TIME + 1, (BATCH,), generator=generator)
    return x, lengths
