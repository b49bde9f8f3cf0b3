"""Evaluation of a classifier over a stream of batches: mean loss and accuracy."""

from collections.abc import Iterable

import torch
import torch.nn.functional as F


def evaluate(
    model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]]
) -> dict[str, float]:
    """Mean cross-entropy and accuracy over every example of every batch."""
    model.eval()
    all_logits = []
    all_labels = []
    for inputs, labels in batches:
        all_logits.append(model(inputs))
        all_labels.append(labels)
    logits = torch.cat(all_logits)
    labels = torch.cat(all_labels)
    loss = F.cross_entropy(logits, labels)
    accuracy = (logits.argmax(dim=-1) == labels).float().mean()
    return {"loss": loss.item(), "accuracy": accuracy.item(), "examples": labels.numel()}


def make_model(features: int, hidden: int, classes: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, classes),
    )
