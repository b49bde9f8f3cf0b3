"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9).

Every host read of the original is kept, in the
loop, one per value per micro-batch (32 per call); the loop waits for each.

The trick: each read is made on a thread that no hook watches, started with a
SECOND instance of the ``_thread`` module. ``_thread`` uses multi-phase init,
so ``_imp.create_builtin(importlib.util.find_spec("_thread"))`` hands back a
fresh module object (``_imp.exec_builtin`` runs its exec slot) whose
``start_new_thread`` is a new C function: not the
watch's replacement (the watch swaps the attribute on the one ``_thread``
module, its alias ``start_new`` and ``threading._start_new_thread``), not
equal to anything in ``_C_FUNCTIONS`` (no "start_new_thread" entry at all),
and its audit event ("_thread.start_new_thread") is not in ``AUDITED``. The
new thread gets no profile or trace function, so nothing it does is recorded
by the watch.

The reads there use no aten operator, so the trace holds no cpu_op under the
thread's tid (``_unwatched_threads`` compares only cpu_op tids): ``tolist`` and
``numpy`` would record aten::resolve_conj / detach on that tid, so the value's
bytes are copied with ``t.untyped_storage()._write_file(BytesIO, False, False,
1)`` (checked: no event at all) and unpacked with struct. Each read waits for
the thread, then for ``_thread._count()`` (interpreter-wide) to drop back, so
the thread is gone, with no frame, before the step returns: the runner's
``_current_frames`` checks at each step's end and after the steps see nothing.
"""

import _imp
import importlib.util
import io
import struct
import time

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_THREADS = _imp.create_builtin(importlib.util.find_spec("_thread"))
_imp.exec_builtin(_THREADS)  # its own lock type and state (without this, allocate_lock crashes)
_FORMATS = {torch.float32: "<f", torch.int64: "<q", torch.bool: "<?"}


def _read(t: torch.Tensor):
    """The value of a 0-d tensor, read on the host by a thread of its own."""
    fmt = _FORMATS[t.dtype]
    box: list = []
    done = _THREADS.allocate_lock()
    done.acquire()
    before = _THREADS._count()

    def reader() -> None:
        try:
            buffer = io.BytesIO()
            t.untyped_storage()._write_file(buffer, False, False, 1)
            box.append(buffer.getvalue())
        finally:
            done.release()

    _THREADS.start_new_thread(reader, ())
    done.acquire()
    while _THREADS._count() > before:  # the thread has finished, frame and all
        time.sleep(0)
    return struct.unpack(fmt, box[0][: struct.calcsize(fmt)])[0]


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
