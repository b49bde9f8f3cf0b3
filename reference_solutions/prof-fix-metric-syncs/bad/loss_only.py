"""Keeps the loss on the device, but still reads the accuracy, the confident
count and the NaN check back every micro-batch."""

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = torch.zeros(())
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if torch.isnan(loss):
            raise FloatingPointError("the loss is NaN")
        total_loss += loss
        probs = logits.softmax(dim=-1)
        correct += (probs.argmax(dim=-1) == yb).sum().item()
        confident += int((probs.max(dim=-1).values > CONFIDENT).sum())
    n = len(labels)
    return {
        "loss": total_loss / n,
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
