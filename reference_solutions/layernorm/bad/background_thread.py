"""A correct kernel run on a background thread; the call returns at once.

custom_kernel allocates the output, queues the launch to a worker thread
started at import, and returns before any work is done. A clock read around
the call sees almost nothing; the output fills in "soon". Work on threads the
harness did not start is an integrity violation whether or not the values
happen to be ready when they are compared.
"""

import queue
import threading

import torch
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = centered * rstd * w + b
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


_jobs: queue.Queue[tuple[object, ...] | None] = queue.Queue()


def _worker() -> None:
    while (job := _jobs.get()) is not None:
        x, weight, bias, y, eps = job
        n_cols = x.shape[-1]
        block = triton.next_power_of_2(n_cols)
        grid = (x.numel() // n_cols,)
        _layernorm_kernel[grid](x, weight, bias, y, n_cols, eps, BLOCK=block)


threading.Thread(target=_worker, name="prefetch", daemon=True).start()


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]) -> torch.Tensor:
    x, weight, bias, eps = data
    x = x.contiguous()
    y = torch.empty_like(x)
    _jobs.put((x, weight, bias, y, eps))
    return y
