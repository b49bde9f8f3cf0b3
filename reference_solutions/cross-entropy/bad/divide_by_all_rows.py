"""Cross-entropy that skips ignored rows in the sum but divides by every row.

Each row's loss is right and ignored rows contribute 0, but the mean is taken
over all n rows instead of the rows with a real target: with a fraction f of
rows ignored the loss comes out (1 - f) times too small. Correct only when
nothing is ignored.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _row_loss_kernel(logits_ptr, targets_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * n_cols
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    target = tl.load(targets_ptr + row)
    valid = target != -100
    target_logit = tl.load(row_ptr + tl.where(valid, target, 0), mask=valid, other=0.0)
    loss = tl.where(valid, m + tl.log(s) - target_logit.to(tl.float32), 0.0)
    tl.store(loss_ptr + row, loss)


@triton.jit
def _mean_kernel(loss_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < n_rows, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_rows)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    logits, targets = data
    logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    row_loss = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    _row_loss_kernel[(n_rows,)](logits, targets.contiguous(), row_loss, n_cols, BLOCK=BLOCK)
    _mean_kernel[(1,)](row_loss, out, n_rows, BLOCK=1024)
    return out
