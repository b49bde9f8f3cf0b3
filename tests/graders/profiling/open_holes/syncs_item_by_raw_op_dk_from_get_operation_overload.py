"""One evaluation step of a small classifier (same results as the original).

Every host read of the original is still made, one per value per micro-batch
(32 per call), with ``aten::_local_scalar_dense`` (what .item() runs), but called
through a dispatch-key handle (``Dispatcher::callBoxedForDispatchKey``, no
RecordFunction: no aten::item / _local_scalar_dense event). As in the corpus's
syncs_item_by_op_dk, except that the handle is not an OpOverload's ``_op_dk``
(wrapped by the runner) but the raw one that ``torch._C._get_operation_overload``
hands back, which the runner neither wraps nor refuses."""

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_OP_DK = torch._C._get_operation_overload("aten::_local_scalar_dense", "")[1]
_CPU = torch._C.DispatchKey.CPU


def _read(t: torch.Tensor):
    return _OP_DK(_CPU, t)  # the host read, unrecorded


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
