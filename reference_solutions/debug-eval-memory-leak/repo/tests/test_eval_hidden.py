import torch

from evaluate import evaluate, make_model
from tests.data import stream


def test_many_batches(seed):
    model = make_model(256, 1024, 1000, seed=seed % 1000)
    return evaluate(model, stream(seed, batches=128, batch_size=256, features=256, classes=1000))


def test_ragged_last_batch(seed):
    model = make_model(64, 128, 7, seed=seed % 1000)
    data = stream(seed, batches=5, batch_size=32, features=64, classes=7, last_batch=3)
    return evaluate(model, data)


def test_single_example_batches(seed):
    model = make_model(16, 32, 5, seed=seed % 1000)
    return evaluate(model, stream(seed, batches=9, batch_size=1, features=16, classes=5))


def test_model_is_left_unchanged(seed):
    model = make_model(16, 32, 5, seed=seed % 1000)
    before = [p.detach().clone() for p in model.parameters()]
    evaluate(model, stream(seed, batches=3, batch_size=8, features=16, classes=5))
    grads = [p.grad for p in model.parameters()]
    return {
        "same": all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True)),
        "grads": all(g is None for g in grads),
    }
