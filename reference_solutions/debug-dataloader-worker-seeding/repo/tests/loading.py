"""Helpers for the loader tests: clips drawn from a seed, a dataset that also says
which worker made each example, and an epoch read back whole."""

import torch
from torch.utils.data import get_worker_info

from clips import AugmentedClips


class TracedClips(AugmentedClips):
    """AugmentedClips whose examples also carry the id of the worker that made them
    (-1 for the main process)."""

    def __getitem__(self, index):
        crop, label = super().__getitem__(index)
        info = get_worker_info()
        return crop, label, -1 if info is None else info.id


def random_clips(seed, count, length, classes=5):
    generator = torch.Generator().manual_seed(seed)
    clips = torch.randn(count, length, generator=generator)
    labels = torch.randint(0, classes, (count,), generator=generator)
    return clips, labels


def repeated_clip(seed, count, length):
    """``count`` copies of one clip: two equal augmentations give two equal examples."""
    clips, labels = random_clips(seed, 1, length)
    return clips.expand(count, length).clone(), labels.expand(count).clone()


def read_epoch(loader):
    """Every example of one pass over ``loader``: crops, labels and worker ids."""
    crops, labels, workers = [], [], []
    for batch_crops, batch_labels, batch_workers in loader:
        crops.append(batch_crops)
        labels.append(batch_labels)
        workers.append(batch_workers)
    return torch.cat(crops), torch.cat(labels), torch.cat(workers)


def distinct(crops):
    """How many different examples there are among ``crops``."""
    return int(torch.unique(crops, dim=0).shape[0])
