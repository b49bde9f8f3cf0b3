"""No reads in the loop, but counts confident predictions by their logit instead
of their probability: a different figure."""

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = torch.zeros(())
    correct = torch.zeros((), dtype=torch.long)
    confident = torch.zeros((), dtype=torch.long)
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        total_loss += F.cross_entropy(logits, yb, reduction="sum")
        correct += (logits.argmax(dim=-1) == yb).sum()
        confident += (logits.max(dim=-1).values > CONFIDENT).sum()
    n = len(labels)
    return {"loss": total_loss / n, "accuracy": correct / n, "confident": confident}
