"""The report that came in: evaluating on the full validation set runs out of memory."""

from evaluate import evaluate, make_model
from tests.data import stream


def test_small_eval():
    model = make_model(32, 64, 10)
    return evaluate(model, stream(0, batches=4, batch_size=16, features=32, classes=10))


def test_full_validation_set():
    # Memory grows with every batch: this one needs far more than the model and a batch.
    model = make_model(256, 1024, 1000)
    return evaluate(model, stream(1, batches=96, batch_size=256, features=256, classes=1000))
