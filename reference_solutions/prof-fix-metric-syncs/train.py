"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9)."""

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if torch.isnan(loss):
            raise FloatingPointError("the loss is NaN")
        total_loss += loss.item()
        probs = logits.softmax(dim=-1)
        correct += (probs.argmax(dim=-1) == yb).sum().item()
        confident += int((probs.max(dim=-1).values > CONFIDENT).sum())
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
