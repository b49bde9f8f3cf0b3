"""Persistent GEMM + bias + erf-GELU epilogue.

As many programs as SMs (or a few on the interpreter) loop over output tiles
tile_id = pid, pid + n_progs, ...; each tile runs the K loop with tl.dot into
fp32 and applies the epilogue before storing. W is [N, K] as nn.Linear keeps
it: the kernel reads it transposed through its strides.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

INV_SQRT2 = 0.7071067811865476


@triton.jit
def persistent_linear_gelu(X, W, Bias, Out, M, N, K, xs_m, xs_k, ws_n, ws_k, os_m, os_n,
                           TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr):
    start = tl.program_id(0)
    n_progs = tl.num_programs(0)
    tiles_n = tl.cdiv(N, TN)
    n_tiles = tl.cdiv(M, TM) * tiles_n
    for tile_id in range(start, n_tiles, n_progs):
        i = (tile_id // tiles_n) * TM + tl.arange(0, TM)
        j = (tile_id % tiles_n) * TN + tl.arange(0, TN)
        acc = tl.zeros((TM, TN), dtype=tl.float32)
        for kk in range(0, K, TK):
            k = kk + tl.arange(0, TK)
            xt = tl.load(X + i[:, None] * xs_m + k[None, :] * xs_k, mask=(i[:, None] < M) & (k[None, :] < K), other=0.0)
            wt = tl.load(W + k[:, None] * ws_k + j[None, :] * ws_n, mask=(k[:, None] < K) & (j[None, :] < N), other=0.0)
            acc += tl.dot(xt, wt)
        acc = acc + tl.load(Bias + j, mask=j < N, other=0.0).to(tl.float32)[None, :]
        act = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
        tl.store(Out + i[:, None] * os_m + j[None, :] * os_n, act.to(Out.dtype.element_ty),
                 mask=(i[:, None] < M) & (j[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        W = self.linear.weight
        M, K = x.shape
        N = W.shape[0]
        out = x.new_empty((M, N))
        if x.is_cuda:
            progs = torch.cuda.get_device_properties(x.device).multi_processor_count
        else:
            progs = 4
        persistent_linear_gelu[(progs,)](x, W, self.linear.bias, out, M, N, K,
                                         x.stride(0), x.stride(1), W.stride(0), W.stride(1),
                                         out.stride(0), out.stride(1), TM=64, TN=64, TK=32)
        return out
