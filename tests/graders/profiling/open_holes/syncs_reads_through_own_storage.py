"""One evaluation step of a small classifier (same results as the original).

Every host read of the original is still made, one per value per micro-batch
(32 per call), each a read of the value's memory on the host. The memory is
shared through a storage the program made itself: ``torch.UntypedStorage(8)``
at import and a float64 tensor put over it with ``Tensor.set_`` (an ordinary
operator, no watched call: neither untyped_storage() nor data_ptr() nor a
storage constructor from an address). Each value is copied into that tensor
(aten::copy_, no item) and the storage's own C helper ``_write_file`` copies the
8 bytes into an io.BytesIO: no aten::item, no watched call, no view the hook
knows of."""

import io
import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_STORAGE = torch.UntypedStorage(8)
_CELL = torch.empty(0, dtype=torch.float64).set_(_STORAGE, 0, (1,), (1,))


def _read(t: torch.Tensor) -> float:
    _CELL.copy_(t.reshape(1))
    out = io.BytesIO()
    _STORAGE._write_file(out, False, False, 1)
    return struct.unpack("<d", out.getvalue()[-8:])[0]


def step(w1, w2, x, labels):
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if _read(torch.isnan(loss)):
            raise FloatingPointError("the loss is NaN")
        total_loss += _read(loss)
        probs = logits.softmax(dim=-1)
        correct += int(_read((probs.argmax(dim=-1) == yb).sum()))
        confident += int(_read((probs.max(dim=-1).values > CONFIDENT).sum()))
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
