"""Synthetic batches, made one at a time as a data loader would."""

import torch


def stream(seed, batches, batch_size, features, classes, last_batch=None):
    generator = torch.Generator().manual_seed(seed)
    for n in range(batches):
        size = last_batch if last_batch is not None and n == batches - 1 else batch_size
        inputs = torch.randn(size, features, generator=generator)
        labels = torch.randint(0, classes, (size,), generator=generator)
        yield inputs, labels
