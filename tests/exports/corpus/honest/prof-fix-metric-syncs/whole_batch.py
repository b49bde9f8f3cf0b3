import torch
import torch.nn.functional as F


def step(w1, w2, x, labels):
    # One pass over the whole batch: the micro-batches only split the same sums.
    logits = torch.relu(x @ w1) @ w2
    loss_sum = F.cross_entropy(logits, labels, reduction="sum")
    if torch.isnan(loss_sum):  # one read per step instead of one per micro-batch
        raise FloatingPointError("NaN loss")
    probs = torch.softmax(logits, dim=1)
    top, predicted = probs.max(dim=1)
    n = labels.numel()
    return {
        "loss": loss_sum / n,
        "accuracy": (predicted == labels).sum() / n,
        "confident": (top > 0.9).sum(),
    }
