import torch
import torch.nn.functional as F

PARTS = 8


def step(w1, w2, x, labels):
    losses, hits, sure = [], [], []
    for xs, ys in zip(torch.chunk(x, PARTS), torch.chunk(labels, PARTS)):
        out = torch.relu(xs @ w1) @ w2
        losses.append(F.cross_entropy(out, ys, reduction="sum"))
        p = out.softmax(-1)
        hits.append((p.argmax(-1) == ys).sum())
        sure.append((p.amax(-1) > 0.9).sum())
    # Everything stays a tensor until here; a single check of the total.
    total = torch.stack(losses).sum()
    if bool(torch.isnan(total)):
        raise FloatingPointError("loss became NaN")
    count = len(labels)
    return {"loss": total / count, "accuracy": torch.stack(hits).sum() / count, "confident": torch.stack(sure).sum()}
