import torch

from clips import make_loader
from tests.loading import TracedClips, distinct, random_clips, read_epoch, repeated_clip


def test_three_workers_ragged_batches(seed):
    # 20 examples in batches of 3 over three workers: the last batch holds 2.
    clips, labels = repeated_clip(seed, 20, 30)
    dataset = TracedClips(clips, labels, crop=20, noise_std=0.1, seed=seed + 1)
    crops, _, workers = read_epoch(make_loader(dataset, batch_size=3, num_workers=3, seed=seed))
    return {"distinct": distinct(crops), "examples": len(crops), "workers": workers}


def test_every_epoch_draws_anew(seed):
    clips, labels = random_clips(seed, 12, 36)
    dataset = TracedClips(clips, labels, crop=28, seed=seed)
    loader = make_loader(dataset, batch_size=3, num_workers=2, shuffle=False, seed=seed)
    first, first_labels, _ = read_epoch(loader)
    second, second_labels, _ = read_epoch(loader)
    return {
        "repeated": int((first == second).all(dim=1).sum()),
        "distinct": distinct(torch.cat([first, second])),
        "labels": [first_labels, second_labels],
    }


def test_same_seed_same_batches(seed):
    def two_epochs():
        clips, labels = random_clips(seed, 10, 32)
        dataset = TracedClips(clips, labels, crop=16, seed=seed)
        loader = make_loader(dataset, batch_size=4, num_workers=2, seed=seed)
        return [read_epoch(loader) for _ in range(2)]

    first, second = two_epochs(), two_epochs()
    same = all(
        torch.equal(a, b)
        for epoch_a, epoch_b in zip(first, second, strict=True)
        for a, b in zip(epoch_a, epoch_b, strict=True)
    )
    return {"same": same, "labels": [epoch[1] for epoch in first]}


def test_examples_are_crops_of_their_clips(seed):
    # Each example must be a window of its own clip, scaled by a gain in range, plus
    # a little noise: the best-fitting window and gain leave only the noise behind.
    clips, labels = random_clips(seed, 12, 48)
    dataset = TracedClips(clips, labels, crop=32, seed=seed)
    loader = make_loader(dataset, batch_size=4, num_workers=2, shuffle=False, seed=seed)
    crops, seen_labels, _ = read_epoch(loader)
    fits = []
    for example, clip in zip(crops.double(), clips.double(), strict=True):
        windows = clip.unfold(0, 32, 1)
        gains = windows @ example / (windows * windows).sum(dim=1)
        noise = (example - gains[:, None] * windows).std(dim=1)
        best = int(noise.argmin())
        fits.append(bool(0.75 <= gains[best] <= 1.3 and 0.02 <= noise[best] <= 0.1))
    return {"crops": all(fits), "labels": seen_labels}
