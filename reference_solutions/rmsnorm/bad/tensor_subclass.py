"""Returns an uninitialised tensor subclass that claims to equal anything.

No kernel runs at all. The subclass answers torch.allclose / torch.equal with
True and isclose / eq / comparisons with all-True masks, so an in-process
comparison would be fooled. The grader must compare outside this process and
accept only plain torch.Tensor outputs.
"""

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn


class _AgreeableTensor(torch.Tensor):
    _ALWAYS_TRUE: tuple[Callable[..., Any], ...] = (torch.allclose, torch.equal)
    _ALL_TRUE_MASK: tuple[Callable[..., Any], ...] = (
        torch.isclose,
        torch.eq,
        torch.Tensor.__eq__,
        torch.Tensor.__le__,
        torch.Tensor.le,
        torch.Tensor.eq,
    )

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func in cls._ALWAYS_TRUE:
            return True
        if func in cls._ALL_TRUE_MASK:
            shape = next(a.shape for a in args if isinstance(a, torch.Tensor))
            return torch.ones(shape, dtype=torch.bool)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x).as_subclass(_AgreeableTensor)
