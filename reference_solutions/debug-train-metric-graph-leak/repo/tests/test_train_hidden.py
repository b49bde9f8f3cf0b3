import torch

from tests.data import stream
from train import make_model, train_epoch


def test_long_epoch(seed):
    model = make_model(48, 96, 3000, seed=seed % 1000)
    metrics = train_epoch(
        model, stream(seed, batches=128, batch_size=96, features=48, classes=3000), lr=0.05
    )
    return {"metrics": metrics, "last_layer": model[-1].weight.detach().sum(dim=0)}


def test_ragged_last_batch(seed):
    model = make_model(64, 128, 7, seed=seed % 1000)
    data = stream(seed, batches=5, batch_size=32, features=64, classes=7, last_batch=3)
    metrics = train_epoch(model, data)
    return {"metrics": metrics, "weights": [p.detach() for p in model.parameters()]}


def test_single_example_steps(seed):
    model = make_model(16, 32, 5, seed=seed % 1000)
    metrics = train_epoch(model, stream(seed, batches=9, batch_size=1, features=16, classes=5))
    return {"metrics": metrics, "weights": [p.detach() for p in model.parameters()]}


def test_gradients_are_the_last_steps(seed):
    model = make_model(16, 32, 5, seed=seed % 1000)
    train_epoch(model, stream(seed, batches=3, batch_size=8, features=16, classes=5), lr=0.2)
    return [p.grad if p.grad is not None else torch.zeros(0) for p in model.parameters()]
