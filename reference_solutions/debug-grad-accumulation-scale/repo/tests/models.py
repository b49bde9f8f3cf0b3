"""Small models and batches for the accumulation tests, drawn from a seed."""

import copy

import torch
import torch.nn.functional as F


def classifier(seed, features=16, hidden=32, classes=5):
    generator = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.Tanh(),
        torch.nn.Linear(hidden, classes),
    )
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return model


def class_batch(seed, examples, features=16, classes=5):
    generator = torch.Generator().manual_seed(seed + 1)
    inputs = torch.randn(examples, features, generator=generator)
    targets = torch.randint(0, classes, (examples,), generator=generator)
    return inputs, targets


def gradients(model):
    return {name: p.grad.clone() for name, p in model.named_parameters()}


def full_batch_gradients(model, inputs, targets, loss_fn=F.cross_entropy):
    """The gradients of the whole batch's mean loss, in one pass, on a copy of ``model``."""
    twin = copy.deepcopy(model)
    twin.zero_grad(set_to_none=True)
    loss_fn(twin(inputs), targets).backward()
    return gradients(twin)


def parameters(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}
