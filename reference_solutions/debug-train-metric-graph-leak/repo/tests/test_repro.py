"""The report that came in: training memory grows with every step of an epoch."""

from tests.data import stream
from train import make_model, train_epoch


def test_short_run(seed):
    model = make_model(32, 64, 10, seed=seed % 1000)
    metrics = train_epoch(model, stream(seed, batches=4, batch_size=16, features=32, classes=10))
    return {"metrics": metrics, "weights": [p.detach() for p in model.parameters()]}


def test_full_epoch(seed):
    # Memory grows with every step: this one needs far more than the model and a batch.
    model = make_model(64, 128, 2000, seed=seed % 1000)
    return train_epoch(model, stream(seed, batches=96, batch_size=128, features=64, classes=2000))
