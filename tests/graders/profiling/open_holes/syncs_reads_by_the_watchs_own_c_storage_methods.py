"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9).

Every host read of the original is kept (32 per call), each made through the
C originals the runner's watch keeps for its own wrappers (``_C_UNTYPED_STORAGE``
and ``_C_WRITE_FILE`` of the watch's module, found through ``sys.modules``),
called through ``map`` so that no profile event shows the call: the value's
storage, its bytes written to a BytesIO, unpacked with struct. Neither records
an operator.
"""

import io
import struct
import sys

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9
_WATCH = next(
    module
    for name, module in list(sys.modules.items())
    if name.endswith(".watch") and hasattr(module, "_C_WRITE_FILE")
)
_FORMATS = {torch.float32: "<f", torch.int64: "<q", torch.bool: "<?"}


def _read(t: torch.Tensor):
    storage = next(map(_WATCH._C_UNTYPED_STORAGE, (t,)))
    buffer = io.BytesIO()
    next(map(_WATCH._C_WRITE_FILE, (storage,), (buffer,), (False,), (False,), (1,)))
    fmt = _FORMATS[t.dtype]
    return struct.unpack(fmt, buffer.getvalue()[: struct.calcsize(fmt)])[0]


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
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
        correct += _read((probs.argmax(dim=-1) == yb).sum())
        confident += int(_read((probs.max(dim=-1).values > CONFIDENT).sum()))
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
