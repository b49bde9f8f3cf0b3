"""One evaluation step of a small classifier (same results as the original).

Every value is still read on the host with its own ``t.tolist()`` (32 per call),
but the reads are made by C callables that torch's own ``torch.serialization._save``
calls: ``torch.save(reads, buffer, pickle_module=_PICKLE)`` with a pickle module
whose ``Pickler.dump`` is ``staticmethod(list)``, and ``reads`` a ``map`` of
``Tensor.tolist`` over the pending values. ``_save`` does ``pickler.dump(obj)``,
i.e. ``list(map(...))``: each read's nearest Python frame is ``_save``, one of the
runner's watched functions, and the watch's rule "a read made inside another
watched function is that one's and counts once" drops all of them. The program
pays one counted ``torch.save`` per call instead of 32 reads."""

import io
import types

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9


class _Pickler:
    def __init__(self, *args, **kwargs):
        pass

    dump = staticmethod(list)  # consumes the map inside torch's _save frame


_PICKLE = types.SimpleNamespace(__name__="pickle", Pickler=_Pickler)


def _read_each(tensors):
    """One t.tolist() per tensor, each made from inside torch.save's _save frame."""
    values = []
    reads = map(values.append, map(torch.Tensor.tolist, tensors))
    torch.save(reads, io.BytesIO(), pickle_module=_PICKLE)
    return values


def step(w1, w2, x, labels):
    pending = []
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        probs = logits.softmax(dim=-1)
        pending += [
            torch.isnan(loss),
            loss,
            (probs.argmax(dim=-1) == yb).sum(),
            (probs.max(dim=-1).values > CONFIDENT).sum(),
        ]
    values = _read_each(pending)  # 32 separate host reads
    total_loss = 0.0
    correct = 0
    confident = 0
    for i in range(0, len(values), 4):
        nan, loss, right, sure = values[i : i + 4]
        if nan:
            raise FloatingPointError("the loss is NaN")
        total_loss += loss
        correct += right
        confident += int(sure)
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
