"""Masked mean pooling as a fused C++ CPU extension (OpenMP, auto-vectorised).

The eager reference writes x * mask (a full-size temporary) and then reads it
back to sum over tokens: two reads and a write of the whole activation. Here
each sequence keeps an fp32 accumulator row of `hidden` floats (a few KiB, in
L1), and only the rows of real tokens are read and added to it; padding rows
are never touched. On the timed shape about half the tokens are padding, so
the kernel reads roughly a quarter of the bytes the reference moves.

Token rows are added in order, so each output element is the same sequence
of fp32 additions as torch's reduction over the token axis. A sequence with
no real tokens yields zeros (the reference divides 0 by 1e-9).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cstdint>

torch::Tensor masked_mean_pool(torch::Tensor x, torch::Tensor mask) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.dim() == 3,
                "x: float32 CPU tensor (batch, seq, hidden)");
    TORCH_CHECK(mask.scalar_type() == torch::kInt64 && mask.sizes() == x.sizes().slice(0, 2),
                "mask: int64 (batch, seq)");
    auto xc = x.contiguous();
    auto mc = mask.contiguous();
    const int64_t batch = xc.size(0), seq = xc.size(1), hidden = xc.size(2);
    auto y = torch::empty({batch, hidden}, xc.options());
    const float* xs = xc.data_ptr<float>();
    const int64_t* ms = mc.data_ptr<int64_t>();
    float* ys = y.data_ptr<float>();

    #pragma omp parallel for schedule(dynamic, 1)
    for (int64_t b = 0; b < batch; ++b) {
        float* acc = ys + b * hidden;  // accumulate straight into the output row
        std::fill(acc, acc + hidden, 0.0f);
        int64_t count = 0;
        for (int64_t t = 0; t < seq; ++t) {
            if (ms[b * seq + t] == 0) continue;  // padding: the row is never read
            const float* row = xs + (b * seq + t) * hidden;
            #pragma omp simd
            for (int64_t h = 0; h < hidden; ++h) acc[h] += row[h];
            ++count;
        }
        if (count > 0) {
            const float denom = static_cast<float>(count);
            #pragma omp simd
            for (int64_t h = 0; h < hidden; ++h) acc[h] /= denom;
        }
    }
    return y;
}
"""

_ext = load_inline(
    name="bw_cpu_masked_mean_pool",
    cpp_sources=_SOURCE,
    functions=["masked_mean_pool"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return _ext.masked_mean_pool(x, mask)
