"""Cross-entropy with ignore_index = -100 in two kernels.

Kernel 1, one program per row, sweeps the vocabulary in chunks with an online
logsumexp (running max, rescaled running sum) and writes the row's loss, or
0 and a zero weight for an ignored row. Kernel 2 reduces losses and weights
and divides: the mean over real rows.
"""

import torch
import triton
import triton.language as tl

CHUNK = 4096


@triton.jit
def row_loss_kernel(logits_ptr, targets_ptr, loss_ptr, valid_ptr, V, row_stride, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * row_stride
    target = tl.load(targets_ptr + row)
    run_max = tl.full([CHUNK], float("-inf"), tl.float32)
    run_sum = tl.zeros([CHUNK], tl.float32)
    for start in range(0, V, CHUNK):
        idx = start + tl.arange(0, CHUNK)
        vals = tl.load(base + idx, mask=idx < V, other=float("-inf")).to(tl.float32)
        bigger = tl.maximum(run_max, vals)
        run_sum = tl.where(
            bigger == float("-inf"), 0.0, run_sum * tl.exp(run_max - bigger) + tl.exp(vals - bigger)
        )
        run_max = bigger
    top = tl.max(run_max, axis=0)
    total = tl.sum(tl.where(run_max == float("-inf"), 0.0, run_sum * tl.exp(run_max - top)), axis=0)
    lse = top + tl.log(total)
    is_real = target != -100
    safe_target = tl.where(is_real, target, 0)
    picked = tl.load(base + safe_target).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(is_real, lse - picked, 0.0))
    tl.store(valid_ptr + row, tl.where(is_real, 1.0, 0.0))


@triton.jit
def mean_kernel(loss_ptr, valid_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    cnt = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + idx, mask=idx < n, other=0.0)
        cnt += tl.load(valid_ptr + idx, mask=idx < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / tl.sum(cnt, axis=0))


def custom_kernel(data):
    logits, targets = data
    n, vocab = logits.shape
    losses = torch.empty(n, device=logits.device, dtype=torch.float32)
    valid = torch.empty(n, device=logits.device, dtype=torch.float32)
    row_loss_kernel[(n,)](logits, targets, losses, valid, vocab, logits.stride(0), CHUNK=CHUNK)
    result = torch.empty((), device=logits.device, dtype=torch.float32)
    mean_kernel[(1,)](losses, valid, result, n, BLOCK=1024)
    return result
