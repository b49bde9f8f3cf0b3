import torch
import torch.nn.functional as F

from accumulate import accumulate_gradients, train_step
from tests.models import class_batch, classifier, gradients, parameters


def test_ragged_last_micro_batch(seed):
    # 30 examples in micro-batches of 8: the last one holds 6.
    model = classifier(seed, features=12, hidden=24, classes=7)
    inputs, targets = class_batch(seed, 30, features=12, classes=7)
    loss = accumulate_gradients(model, inputs, targets, micro_batch_size=8)
    return {"loss": loss, "grads": gradients(model)}


def test_momentum_steps_with_ragged_micro_batches(seed):
    model = classifier(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
    losses = []
    for step in range(3):
        inputs, targets = class_batch(seed + 10 * step, 26)
        losses.append(train_step(model, optimizer, inputs, targets, micro_batch_size=7))
    return {"losses": losses, "parameters": parameters(model)}


def test_regression_over_many_splits(seed):
    generator = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    inputs = torch.randn(17, 6, generator=generator)
    targets = torch.randn(17, 3, generator=generator)
    results = []
    for micro_batch_size in (1, 4, 6, 16):
        model.zero_grad(set_to_none=True)
        loss = accumulate_gradients(
            model, inputs, targets, micro_batch_size=micro_batch_size, loss_fn=F.mse_loss
        )
        results.append({"loss": loss, "grads": gradients(model)})
    return results


def test_forward_passes_stay_within_micro_batch(seed):
    model = classifier(seed)
    sizes = []
    model.register_forward_pre_hook(lambda module, args: sizes.append(args[0].shape[0]))
    inputs, targets = class_batch(seed, 23)
    accumulate_gradients(model, inputs, targets, micro_batch_size=5)
    return {"forward_sizes": sizes, "has_grads": [p.grad is not None for p in model.parameters()]}


def test_large_batch_in_small_micro_batches(seed):
    # The reason to accumulate: a batch whose activations do not fit at once. Judged on
    # peak memory too: running the whole batch in one pass holds 4096 x 2048 floats per
    # layer, micro-batches of 64 hold 64 x 2048.
    model = classifier(seed, features=64, hidden=2048, classes=4)
    inputs, targets = class_batch(seed, 4096, features=64, classes=4)
    loss = accumulate_gradients(model, inputs, targets, micro_batch_size=64)
    return {"loss": loss, "grads": gradients(model)}
