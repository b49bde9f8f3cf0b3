"""Training inputs for the keyword-spotting model: random fixed-length crops of
audio clips, each with a random gain and background noise, batched by a
DataLoader that augments in worker processes."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class AugmentedClips(Dataset):
    """Labelled clips; every access returns a fresh random augmentation of a clip.

    An augmented example is a window of ``crop`` samples at a random offset of the
    clip, scaled by a gain drawn from ``gain`` and with Gaussian noise of standard
    deviation ``noise_std`` added. The augmentations are drawn from a generator
    seeded with ``seed``, so that a run can be repeated.
    """

    def __init__(
        self,
        clips: torch.Tensor,
        labels: torch.Tensor,
        crop: int,
        *,
        gain: tuple[float, float] = (0.8, 1.25),
        noise_std: float = 0.05,
        seed: int = 0,
    ) -> None:
        if clips.ndim != 2 or clips.shape[1] < crop:
            raise ValueError(f"clips must be (n, length >= {crop}), got {tuple(clips.shape)}")
        if labels.shape != clips.shape[:1]:
            raise ValueError("one label per clip")
        self.clips = clips.to(torch.float32).numpy()
        self.labels = labels.tolist()
        self.crop = crop
        self.gain = gain
        self.noise_std = noise_std
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.labels)

    def augment(self, clip: np.ndarray) -> np.ndarray:
        """A random crop of ``clip`` with a random gain and additive noise."""
        start = int(self.rng.integers(0, clip.shape[0] - self.crop + 1))
        gain = self.rng.uniform(*self.gain)
        noise = self.rng.standard_normal(self.crop, dtype=np.float32) * self.noise_std
        return (clip[start : start + self.crop] * gain + noise).astype(np.float32)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.from_numpy(self.augment(self.clips[index])), self.labels[index]


def make_loader(
    dataset: Dataset,
    *,
    batch_size: int,
    num_workers: int = 2,
    shuffle: bool = True,
    seed: int = 0,
) -> DataLoader:
    """Batches of ``dataset``, augmented by ``num_workers`` worker processes.

    The order of the examples is drawn from ``seed``: the same dataset and seed give
    the same batches.
    """
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        generator=generator,
    )
