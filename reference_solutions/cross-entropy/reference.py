"""Mean cross-entropy over rows of logits with int64 targets, ignore_index = -100.

GPU MODE format. The logits are upcast to float32 first, as language-model
training code does; the loss is a 0-dim float32 tensor: the sum of per-row
losses over rows whose target is not -100, divided by the number of such rows.
At least one row per input keeps a real target.
"""

import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
IGNORE_INDEX = -100


def generate_input(
    n: int, vocab: int, dtype: str, scale: float, ignore_frac: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    logits = torch.randn(n, vocab, device=DEVICE, generator=gen) * scale
    targets = torch.randint(0, vocab, (n,), device=DEVICE, generator=gen)
    ignored = torch.rand(n, device=DEVICE, generator=gen) < ignore_frac
    keep = torch.randint(0, n, (1,), device=DEVICE, generator=gen)
    ignored[keep] = False
    targets = targets.masked_fill(ignored, IGNORE_INDEX)
    return logits.to(getattr(torch, dtype)), targets


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    logits, targets = data
    return F.cross_entropy(logits.float(), targets, ignore_index=IGNORE_INDEX, reduction="mean")
