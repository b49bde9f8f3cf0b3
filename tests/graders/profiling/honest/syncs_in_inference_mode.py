"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9).

The running sums stay on the device: nothing is read back to the host inside
the loop, and the NaN check reads one value per step instead of one per
micro-batch."""

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9


@torch.inference_mode()
def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = torch.zeros((), dtype=x.dtype, device=x.device)
    correct = torch.zeros((), dtype=torch.long, device=x.device)
    confident = torch.zeros((), dtype=torch.long, device=x.device)
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        total_loss += F.cross_entropy(logits, yb, reduction="sum")
        probs = logits.softmax(dim=-1)
        correct += (probs.argmax(dim=-1) == yb).sum()
        confident += (probs.max(dim=-1).values > CONFIDENT).sum()
    if torch.isnan(total_loss):
        raise FloatingPointError("the loss is NaN")
    n = len(labels)
    return {"loss": total_loss / n, "accuracy": correct / n, "confident": confident}
