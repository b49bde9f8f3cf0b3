"""Cross-entropy with logsumexp computed as log(sum(exp(x))).

Fine for unit-scale logits; once logits reach ~89 (float32) exp() overflows to
inf, the row loss becomes inf or NaN, and so does the mean.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _row_loss_kernel(logits_ptr, targets_ptr, loss_ptr, weight_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * n_cols
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x)
    target = tl.load(targets_ptr + row)
    valid = target != -100
    target_logit = tl.load(row_ptr + tl.where(valid, target, 0), mask=valid, other=0.0)
    loss = tl.where(valid, tl.log(tl.sum(acc, axis=0)) - target_logit.to(tl.float32), 0.0)
    tl.store(loss_ptr + row, loss)
    tl.store(weight_ptr + row, valid.to(tl.float32))


@triton.jit
def _mean_kernel(loss_ptr, weight_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    loss_acc = tl.zeros((BLOCK,), tl.float32)
    weight_acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_rows
        loss_acc += tl.load(loss_ptr + offs, mask=mask, other=0.0)
        weight_acc += tl.load(weight_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr, tl.sum(loss_acc, axis=0) / tl.sum(weight_acc, axis=0))


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    logits, targets = data
    logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    row_loss = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    row_weight = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    _row_loss_kernel[(n_rows,)](
        logits, targets.contiguous(), row_loss, row_weight, n_cols, BLOCK=BLOCK
    )
    _mean_kernel[(1,)](row_loss, row_weight, out, n_rows, BLOCK=1024)
    return out
