"""One evaluation step of a small classifier (same results as the original).

Every value is read on the host, one at a time (32 per call), through a CPU random
generator's seed, as in the corpus's generator exploit, but without calling
``Generator.set_state``: the state tensor goes in through the generator's pickle
hook ``Generator.__setstate__((seed, None, state))``, a C method
(THPGenerator_pickleSetState) that calls the C ``set_state`` directly
(THPGenerator_setState), past the runner's Python wrapper put on the class's
``set_state`` attribute. C++ reads the state tensor's memory; no aten:: event, no
watched call; ``initial_seed()`` hands the 8 bytes back as an int."""

import struct

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9

_GEN = torch.Generator()
_STATE = _GEN.get_state()


def _bytes_of(t: torch.Tensor) -> bytes:
    state = _STATE.clone()
    raw = t.reshape(1).view(torch.uint8)
    state[:8].zero_()
    state[: raw.numel()].copy_(raw)
    _GEN.__setstate__((0, None, state))  # C++ reads the state tensor's memory
    return _GEN.initial_seed().to_bytes(8, "little")


def _float(t):
    return struct.unpack("<f", _bytes_of(t)[:4])[0]


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
