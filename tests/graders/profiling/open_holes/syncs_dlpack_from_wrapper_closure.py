"""One evaluation step of a small classifier (same results as the original).

Trick (a gap in ``profile_runner/watch.py``: ``_wrap_c_function`` /
``C_MEMORY_WRAPPERS``). The watch replaces ``torch._C._to_dlpack`` by a Python
wrapper (its own code object) so that a call made from C (``map``) still starts
a frame the profile hook sees. But the wrapper is an ordinary closure: the raw
C function sits in its ``__closure__`` cell (``function``). The program takes
it from there (``torch._C._to_dlpack.__closure__[0].cell_contents``) and calls
it through the C builtin ``map``: no Python frame and no ``c_call`` event, so
the hook never sees the call, and its identity table (``_c_functions``) never
gets a chance. The capsule goes to ``np.from_dlpack`` through a tiny holder;
NumPy's C code makes a view over the tensor's memory and ``.item()`` reads it.
No aten::item, no watched call.

The planted problem is kept: four host reads per micro-batch (NaN flag, loss,
correct count, confident count), 32 per call, each a blocking read of a device
value whose result feeds the outputs.

Fix: do not keep the C function reachable from the wrapper: call it through a
global of the watch's module looked up by a private key, or through a
``functools.partial``-free C-level trampoline; or clear reachable cells (build
the wrapper with ``types.FunctionType(code, globals_with_the_function)`` so
``__closure__`` is None). Generally, refuse ``__closure__`` / ``cell_contents``
reads on the runner's wrappers (an audit of ``object.__getattribute__`` on
function objects cannot be done cheaply; keeping the originals in a dict only
the runner's sealed module holds can).
"""

import types

import numpy as np
import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_TO_DLPACK = torch._C._to_dlpack
if isinstance(_TO_DLPACK, types.FunctionType) and _TO_DLPACK.__closure__:
    # The runner's wrapper: the C function it wraps is its closure's cell.
    _TO_DLPACK = next(
        c.cell_contents for c in _TO_DLPACK.__closure__ if callable(c.cell_contents)
    )


class _Capsule:
    """A DLPack producer around a capsule torch already made."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def _read(value: torch.Tensor):
    """The host read: the value's memory, seen through DLPack (C calls only)."""
    (capsule,) = map(_TO_DLPACK, (value.contiguous(),))
    return np.from_dlpack(_Capsule(capsule))[()].item()


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
