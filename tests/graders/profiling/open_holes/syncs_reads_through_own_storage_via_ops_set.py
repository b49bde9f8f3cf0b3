"""One evaluation step of a small classifier (same results as the original).

As the corpus's syncs_reads_through_own_storage (a float64 tensor over a storage
the program made, each value copied in with aten::copy_, the 8 bytes copied out by
the storage's own C helper ``_write_file``), but the tensor is put over the storage
without ``Tensor.set_``: the runner's fix wraps the *method* set_ (on torch.Tensor
and TensorBase) to watch ``_over_a_storage``, while the same operator called as
``torch.ops.aten.set_.source_Storage_storage_offset`` (an OpOverload, recorded as
aten::set_, not a sync candidate) never passes through that wrapper. (The legacy
constructor ``torch.DoubleTensor(storage)`` / ``x.new(storage)`` is another route.)
No aten::item, no watched call, no view the hook knows of."""

import io
import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_STORAGE = torch.UntypedStorage(8)
_CELL = torch.ops.aten.set_.source_Storage_storage_offset(
    torch.empty(0, dtype=torch.float64), _STORAGE, 0, [1], [1]
)


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
