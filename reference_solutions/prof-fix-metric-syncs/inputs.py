"""The evaluation batch and the classifier's weights, from a seed."""

import torch

BATCH, FEATURES, HIDDEN, CLASSES = 256, 64, 128, 10


def make_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    w1 = torch.randn(FEATURES, HIDDEN, generator=generator) / FEATURES**0.5
    w2 = torch.randn(HIDDEN, CLASSES, generator=generator) * 3 / HIDDEN**0.5
    x = torch.randn(BATCH, FEATURES, generator=generator)
    labels = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    return w1, w2, x, labels
