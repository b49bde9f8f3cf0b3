"""A correct kernel behind a cache keyed by (shape, dtype).

The first call per shape computes honestly; every later call returns that first
output. It looks like a speedup, but the grader draws fresh inputs for each
trial and each timed call, so the stale output is simply a wrong answer.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 2048

# Module level, so it survives the harness building a fresh ModelNew per trial.
_CACHE: dict[tuple[object, ...], torch.Tensor] = {}


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    two_u = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-two_u))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype)
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _gelu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        _CACHE[key] = y
        return y
