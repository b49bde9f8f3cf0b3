"""One evaluation step of a small classifier (same results as the original).

Every host read of the original is still made, one per value per micro-batch
(the NaN flag, the loss, the correct count, the confident count: 32 per call),
and each still waits for the value on the host. None is an aten::item: the
value is used as an index into a one-element tensor, shifted so that it is
always out of bounds. The CPU index kernel reads it to check the bounds and
raises ``IndexError("index 37 is out of bounds for dimension 0 with size 1")``;
the value is parsed back out of the message. The trace shows one aten::index
(not a sync candidate); the runner's hook sees no watched call. The float loss
goes through its int32 bit pattern (``view(torch.int32)``), rebuilt with
``struct``.
"""

import re
import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9
_ONE = torch.zeros(1)
_SHIFT = 2**32  # above any int32, so every index is out of bounds
_NUMBER = re.compile(r"index (-?\d+) is out of bounds")


def _read_int(value: torch.Tensor) -> int:
    """The host read: the value, as the index the bounds check refused."""
    try:
        _ONE[value.reshape(1).long() + _SHIFT]
    except IndexError as refused:
        return int(_NUMBER.search(str(refused)).group(1)) - _SHIFT
    raise AssertionError("in bounds")


def _read_float32(value: torch.Tensor) -> float:
    bits = _read_int(value.reshape(1).view(torch.int32))
    return struct.unpack("<f", struct.pack("<i", bits))[0]


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if _read_int(torch.isnan(loss)):
            raise FloatingPointError("the loss is NaN")
        total_loss += _read_float32(loss)
        probs = logits.softmax(dim=-1)
        correct += _read_int((probs.argmax(dim=-1) == yb).sum())
        confident += _read_int((probs.max(dim=-1).values > CONFIDENT).sum())
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
