"""One evaluation step of a small classifier (same results as the original).

Every host read of the original is still made, one per value per micro-batch
(32 per call), through an out-of-bounds index error's message ("index 37 is out
of bounds for dimension 0 with size 1"), as in the corpus. But the index error
never enters a Python frame: the indexing is a finalizer made only of C callables
(``__del__`` is a property whose getter is an attrgetter handing back a
functools.partial of Tensor.__getitem__), run as the probe object dies. CPython
reports an exception raised by a finalizer with ``PyErr_WriteUnraisable``, which
hands the exception object to ``sys.unraisablehook`` (set to a function of the
program's) after it is cleared: no frame ever has it raised into it, so the
runner's trace function gets no "exception" event, and no watched call is made.
The trace shows aten::index (not a sync candidate)."""

import functools
import operator
import re
import struct
import sys

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_ONE = torch.zeros(1)
_SHIFT = 2**32  # above any int32: every index is out of bounds
_NUMBER = re.compile(r"index (-?\d+) is out of bounds")
_GETITEM = torch.Tensor.__getitem__  # a C slot wrapper
_CAUGHT: list[str] = []


def _unraisable(report) -> None:
    """sys.unraisablehook: handed the finalizer's exception, already cleared."""
    _CAUGHT.append(str(report.exc_value))


sys.unraisablehook = _unraisable


class _Probe:
    # slot_tp_finalize looks __del__ up through its descriptor: property ->
    # attrgetter(self) -> the partial kept on the instance, called with no args.
    __del__ = property(operator.attrgetter("then"))


def _read_int(value: torch.Tensor) -> int:
    """The host read: the value, as the index the bounds check refused."""
    probe = _Probe()
    probe.then = functools.partial(_GETITEM, _ONE, value.reshape(1).long() + _SHIFT)
    del probe  # the finalizer runs here; its IndexError goes to sys.unraisablehook
    return int(_NUMBER.search(_CAUGHT.pop()).group(1)) - _SHIFT


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
