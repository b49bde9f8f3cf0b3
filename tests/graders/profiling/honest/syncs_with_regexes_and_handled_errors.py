"""One evaluation step of a small classifier. The batch goes through in
micro-batches; the step returns the mean loss, the accuracy, and how many
predictions were confident (top probability above 0.9).

The running sums stay on the device, and the NaN check reads one value per
step. Around the numbers, ordinary Python that raises and handles errors in C
code: regular expressions compiled per step (the parser handles dozens of
IndexErrors while compiling), a cache that misses with a KeyError, and a
``float()`` of a setting that is not a number. None of it reads a tensor. The
last one's ValueError counts as one host read per step all the same (its
message could carry a value: the runner cannot tell), far below the
original's 32."""

import re

import torch
import torch.nn.functional as F

MICRO_BATCHES = 8
CONFIDENT = 0.9
_NAME = re.compile(r"^[a-z][a-z_]*$")
_SETTINGS = {"confident": "0.9", "micro_batches": "eight"}
_SEEN: dict[str, bool] = {}


def _setting(name: str, default: float) -> float:
    try:
        return float(_SETTINGS[name])
    except ValueError:
        return default


def _checked(name: str) -> str:
    try:
        return name if _SEEN[name] else ""
    except KeyError:
        pattern = re.compile(rf"(?P<word>{name[:3]}[a-z_]*)(?:\s+\d+)?")
        _SEEN[name] = bool(_NAME.match(name) and pattern.fullmatch(name))
        return name


def step(
    w1: torch.Tensor, w2: torch.Tensor, x: torch.Tensor, labels: torch.Tensor
) -> dict[str, torch.Tensor]:
    confident_above = _setting("confident", CONFIDENT)
    micro_batches = int(_setting("micro_batches", MICRO_BATCHES))
    _SEEN.clear()
    total_loss = torch.zeros((), dtype=x.dtype, device=x.device)
    correct = torch.zeros((), dtype=torch.long, device=x.device)
    confident = torch.zeros((), dtype=torch.long, device=x.device)
    for xb, yb in zip(x.chunk(micro_batches), labels.chunk(micro_batches), strict=True):
        logits = torch.relu(xb @ w1) @ w2
        total_loss += F.cross_entropy(logits, yb, reduction="sum")
        probs = logits.softmax(dim=-1)
        correct += (probs.argmax(dim=-1) == yb).sum()
        confident += (probs.max(dim=-1).values > confident_above).sum()
    if torch.isnan(total_loss):
        raise FloatingPointError("the loss is NaN")
    n = len(labels)
    names = [_checked(name) for name in ("loss", "accuracy", "confident")]
    return dict(zip(names, (total_loss / n, correct / n, confident), strict=True))
