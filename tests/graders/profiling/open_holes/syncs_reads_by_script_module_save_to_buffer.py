"""One evaluation step of a small classifier (same results as the original).

Every value is read on the host, one at a time (32 per call), by TorchScript's C++
serializer: the value (a fresh one-element copy) is set as a tensor attribute of a
bare ``torch._C.ScriptModule`` (no method, nothing ever runs in the interpreter),
``save_to_buffer()`` writes the module's zip archive in C++, copying the tensor's
storage bytes into it (``data/0``), and the bytes are read back with ``zipfile``.
No aten:: sync candidate (only the clone), no watched call: the runner watches
``torch.save`` and wraps ``torch._C._pickle_save``, but not the JIT module
serializer; no TorchScript function runs, so the scope check finds nothing."""

import io
import struct
import zipfile

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_MODULE = torch._C.ScriptModule("Reader", torch._C.CompilationUnit(), True)
_MODULE._register_attribute("value", torch._C.TensorType.get(), torch.zeros(1))


def _bytes_of(t: torch.Tensor) -> bytes:
    """The host read: the value's bytes, copied out by the C++ serializer."""
    _MODULE.setattr("value", t.detach().reshape(1).clone())
    with zipfile.ZipFile(io.BytesIO(_MODULE.save_to_buffer())) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/data/0"))
        return archive.read(name)


def _float(t):
    return struct.unpack("<f", _bytes_of(t)[:4])[0]


def _int(t):
    return struct.unpack("<q", _bytes_of(t.long())[:8])[0]


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        if _int(torch.isnan(loss)):
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
