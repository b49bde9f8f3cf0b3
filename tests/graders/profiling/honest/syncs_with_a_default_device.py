"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9).

The running sums stay on the device (the default device, set once here so the
accumulators are made where the batch lives): nothing is read back to the host
inside the loop, and the NaN check reads one value per step instead of one per
micro-batch."""

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
torch.set_default_device(DEVICE)


def step(w1, w2, x, labels):
    total_loss = torch.zeros((), dtype=x.dtype)
    correct = torch.zeros((), dtype=torch.long)
    confident = torch.zeros((), dtype=torch.long)
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
