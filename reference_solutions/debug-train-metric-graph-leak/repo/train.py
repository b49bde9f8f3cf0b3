"""One epoch of classifier training, with the metrics the training dashboard logs."""

from collections.abc import Iterable

import torch
import torch.nn.functional as F


def train_epoch(
    model: torch.nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    *,
    lr: float = 0.1,
) -> dict[str, float]:
    """One pass of SGD over ``batches``.

    Returns the mean training loss over the steps, the mean confidence (the largest
    softmax probability of each example, averaged over the step's examples and then
    over the steps) and the number of steps.
    """
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    model.train()
    total_loss = 0.0
    total_confidence = 0.0
    steps = 0
    for inputs, labels in batches:
        optimizer.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        total_loss += loss
        total_confidence += logits.softmax(dim=-1).amax(dim=-1).mean()
        steps += 1
    return {
        "loss": float(total_loss / steps),
        "confidence": float(total_confidence / steps),
        "steps": steps,
    }


def make_model(features: int, hidden: int, classes: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, classes),
    )
