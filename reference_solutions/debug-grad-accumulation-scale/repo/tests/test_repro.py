"""The report that came in: with gradient accumulation the gradients are several
times those of the same batch run whole."""

import torch

from accumulate import accumulate_gradients, train_step
from tests.models import class_batch, classifier, full_batch_gradients, gradients, parameters


def test_accumulated_gradient_matches_full_batch(seed):
    model = classifier(seed)
    inputs, targets = class_batch(seed, 32)
    expected = full_batch_gradients(model, inputs, targets)
    loss = accumulate_gradients(model, inputs, targets, micro_batch_size=8)
    accumulated = gradients(model)
    for name, grad in accumulated.items():
        assert torch.allclose(grad, expected[name], rtol=1e-4, atol=1e-6), name
    return {"loss": loss, "grads": accumulated}


def test_one_micro_batch(seed):
    model = classifier(seed)
    inputs, targets = class_batch(seed, 12)
    loss = accumulate_gradients(model, inputs, targets, micro_batch_size=16)
    return {"loss": loss, "grads": gradients(model)}


def test_train_step_whole_batch(seed):
    model = classifier(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = class_batch(seed, 10)
    loss = train_step(model, optimizer, inputs, targets, micro_batch_size=10)
    return {"loss": loss, "parameters": parameters(model)}
