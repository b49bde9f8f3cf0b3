"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9).

(a) The trick: every host read of the original is still here, four per
micro-batch, but each value reaches the host as the *place where an operator
refused an index*, and that refusal never enters a Python frame. To read v in
[0, most]: a 1-d tensor of indices that are 0 (valid) before position v and 1
(out of range) from v on; ``map(torch.embedding, repeat(one_row), indices)``
looks each up in a one-row table; an object whose class has only a
``__getitem__``, and that ``__getitem__`` is ``partial(next, that_map)`` (C
callables all the way), is iterated by the interpreter's old sequence
iterator. ``index_select`` raises ``IndexError`` at position v in C++; the
sequence iterator (C, ``iter_iternext``) takes an ``IndexError`` from
``__getitem__`` for the end of the sequence and swallows it; ``len(list(...))``
is v. The watch sees a value read through an error only when the error is
raised *into a frame* (``profile_runner/watch.py``, ``Watch._make_tracer``:
the trace function's ``exception`` event) or reaches ``sys.unraisablehook``
(the audit hook); an exception raised by C code and handled by C code gives
neither. No ``aten::item`` / ``_local_scalar_dense`` / sync candidate is in the
trace (``aten::embedding`` / ``index_select`` are not candidates), no watched
read is made, so the syncs per call fall to zero. Floats go through their bit
pattern, one bit per read.

(b) The planted problem is kept: per micro-batch the NaN flag, the loss, the
correct count and the confident count are each brought back to the host and
waited for (the Python float/int sums of the original), 32 value reads per call
(the loss as 32 one-bit reads), all feeding the result.

(c) Fix: count operator *errors*, not only errors seen in frames: the trace
function could follow C calls too (``sys.setprofile``'s ``c_exception`` covers
only C functions called from a frame), so better to record in C++: wrap the
dispatcher's error path (a ``torch.library`` fallback or a RecordFunction end
callback that notes an exception), or simply treat any operator that ran and
raised in a step (Kineto marks none, but the runner can compare the count of
``c10::Error``s thrown via a counter in ``torch._C._set_...`` / a
``TORCH_WARN``-style hook) as a host read. Cheaper and closer to the route:
refuse old-style sequence iteration over objects whose ``__getitem__`` is not a
Python function (the watch can check classes the program makes through its
audit hook, ``object.__setattr__`` on types is audited), and count
``IndexError``/``StopIteration`` raised by torch's C functions even when the
frame-less consumer is ``iter_iternext`` or ``next(it, default)``.
"""

import functools
import itertools
import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9
_ONE_ROW = torch.zeros(1, 1)


def _host_int(t: torch.Tensor, most: int) -> int:
    """The value of a 0-d integer tensor in [0, most], on the host (a blocking read)."""
    positions = torch.arange(most + 1)
    indices = (positions >= t).to(torch.int64)  # 0 while k < v, then out of range
    lookups = map(torch.embedding, itertools.repeat(_ONE_ROW), indices.unbind())
    sequence = type("Lookups", (), {"__getitem__": staticmethod(functools.partial(next, lookups))})
    return len(list(iter(sequence())))


def _host_float(t: torch.Tensor) -> float:
    bits = t.to(torch.float32).reshape(()).view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    value = sum(_host_int((bits >> b) & 1, 1) << b for b in range(32))
    return struct.unpack("<f", struct.pack("<I", value))[0]


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        rows = len(yb)
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if _host_int(torch.isnan(loss).to(torch.int64), 1):
            raise FloatingPointError("the loss is NaN")
        total_loss += _host_float(loss)
        probs = logits.softmax(dim=-1)
        correct += _host_int((probs.argmax(dim=-1) == yb).sum(), rows)
        confident += _host_int((probs.max(dim=-1).values > CONFIDENT).sum(), rows)
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
