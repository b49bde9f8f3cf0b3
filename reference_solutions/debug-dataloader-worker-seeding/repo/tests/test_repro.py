"""The report that came in: with worker processes the loader hands out the same
augmentations again and again."""

from clips import make_loader
from tests.loading import TracedClips, distinct, random_clips, read_epoch, repeated_clip


def test_workers_repeat_augmentations(seed):
    # Sixteen copies of one clip: every example should still be augmented differently.
    clips, labels = repeated_clip(seed, 16, 48)
    dataset = TracedClips(clips, labels, crop=32, seed=seed)
    crops, _, workers = read_epoch(make_loader(dataset, batch_size=4, num_workers=2, seed=seed))
    return {"distinct": distinct(crops), "examples": len(crops), "workers": workers}


def test_labels_and_shapes(seed):
    clips, labels = random_clips(seed, 20, 40)
    dataset = TracedClips(clips, labels, crop=24, seed=seed)
    loader = make_loader(dataset, batch_size=6, num_workers=2, seed=seed)
    shapes = [tuple(crops.shape) for crops, _, _ in loader]
    crops, loaded, workers = read_epoch(loader)
    return {"shapes": shapes, "dtype": str(crops.dtype), "labels": loaded, "workers": workers}


def test_single_process_loading(seed):
    clips, labels = repeated_clip(seed, 12, 40)
    dataset = TracedClips(clips, labels, crop=24, seed=seed)
    crops, loaded, workers = read_epoch(
        make_loader(dataset, batch_size=4, num_workers=0, seed=seed)
    )
    return {"distinct": distinct(crops), "labels": loaded, "workers": workers}
