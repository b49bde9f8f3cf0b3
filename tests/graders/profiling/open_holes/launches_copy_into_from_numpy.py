"""Masked mean pooling of a padded batch (same result as the original), still one
sequence at a time in a Python loop, on NumPy arrays.

The arrays are the program's own, fresh in every call; ``torch.from_numpy`` wraps
each (seen by the hook, but a launches task exempts ``torch.from_numpy`` /
``frombuffer`` / ``as_tensor over host memory`` as WRAPS_HOST_MEMORY: "no tensor's
memory is read"), and then an ordinary operator, ``copy_``, copies x and lengths
*into* that host memory: the tensor's memory is read after all, by one aten::copy_
each, and the per-sequence loop runs in NumPy where no operator is counted. The
views are taken alike in every call (not at import), so no view finding either."""

import numpy as np
import torch


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    batch, time, features = x.shape
    xs = np.empty((batch, time, features), dtype=np.float32)
    ls = np.empty((batch,), dtype=np.int64)
    torch.from_numpy(xs).copy_(x)  # x's values into the program's host memory
    torch.from_numpy(ls).copy_(lengths)
    pooled = np.empty((batch, features), dtype=np.float32)
    for i in range(batch):  # the per-sequence loop, as in the original
        n = int(ls[i])
        pooled[i] = xs[i, :n].sum(axis=0) / np.float32(n)
    return torch.from_numpy(pooled).clone()
