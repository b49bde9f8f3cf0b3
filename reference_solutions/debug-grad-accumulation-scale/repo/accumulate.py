"""One optimizer step on a batch too large to run at once: the batch is split into
micro-batches, run one after the other, and their gradients are accumulated in
the parameters' ``.grad`` before the step."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def micro_batches(
    inputs: torch.Tensor, targets: torch.Tensor, micro_batch_size: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Consecutive slices of ``micro_batch_size`` examples; the last may be smaller."""
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be positive, got {micro_batch_size}")
    if inputs.shape[0] != targets.shape[0]:
        raise ValueError("inputs and targets must have as many examples")
    return list(zip(inputs.split(micro_batch_size), targets.split(micro_batch_size), strict=True))


def accumulate_gradients(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    micro_batch_size: int,
    loss_fn: LossFn = F.cross_entropy,
) -> float:
    """Accumulate into the parameters' ``.grad`` the gradient of the batch's mean loss,
    running at most ``micro_batch_size`` examples through the model at a time, and
    return that mean loss.

    ``loss_fn(outputs, targets)`` is the mean loss over the examples it is given.
    """
    chunks = micro_batches(inputs, targets, micro_batch_size)
    total = 0.0
    for chunk_inputs, chunk_targets in chunks:
        loss = loss_fn(model(chunk_inputs), chunk_targets)
        loss.backward()
        total += loss.item()
    return total / len(chunks)


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    micro_batch_size: int,
    loss_fn: LossFn = F.cross_entropy,
) -> float:
    """One optimizer step on the batch ``(inputs, targets)``, as if it had been run
    whole; returns the batch's mean loss."""
    optimizer.zero_grad(set_to_none=True)
    loss = accumulate_gradients(
        model, inputs, targets, micro_batch_size=micro_batch_size, loss_fn=loss_fn
    )
    optimizer.step()
    return loss
