"""One evaluation step of a small classifier (same results as the original).

Every value is read on the host, one at a time (32 per call): its bytes are
copied (aten::copy_, not a sync candidate) into a tensor that lies over a
bytearray of the program's, and the bytearray is read in Python. The tensor over
the bytearray is made by ``torch.frombuffer`` called from C (``map`` with a
functools.partial): the runner watches torch.frombuffer (and torch.from_numpy,
torch.from_file, UntypedStorage.from_buffer / from_file) only as ``c_call``
events, which a C function called from C code never gives; unlike tolist/numpy/
data_ptr/_to_dlpack, these are not replaced by Python wrappers. So no view is
recorded, the shared buffer is never reported, and the reads are plain memory."""

import functools
import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_BUF = bytearray(8)
# torch.frombuffer called by map (C), not by a Python frame: no c_call event.
_VIEW = next(map(functools.partial(torch.frombuffer, dtype=torch.uint8), (_BUF,)))


def _bytes_of(t: torch.Tensor) -> bytes:
    raw = t.reshape(1).view(torch.uint8)
    n = raw.numel()
    _VIEW[:n].copy_(raw)  # the value's bytes into the program's own memory
    return bytes(_BUF[:n])  # the host read: plain memory


def _float(t):
    return struct.unpack("<f", _bytes_of(t))[0]


def _int(t):
    return struct.unpack("<q", _bytes_of(t))[0]


def _bool(t):
    return _bytes_of(t)[0] != 0


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if _bool(torch.isnan(loss)):
            raise FloatingPointError("the loss is NaN")
        total_loss += _float(loss)
        probs = logits.softmax(dim=-1)
        correct += _int((probs.argmax(dim=-1) == yb).sum())
        confident += _int((probs.max(dim=-1).values > CONFIDENT).sum())
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
