"""Masked mean pooling in C++.

One (batch, hidden-chunk) pair per OpenMP iteration: the mask row is read
once to count the real tokens, then the chunk of the hidden dimension is
accumulated over those tokens only and divided by max(count, 1e-9). A
sequence with no tokens leaves its row at 0 / 1e-9 = 0.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
#include <algorithm>
#include <vector>

torch::Tensor masked_mean(torch::Tensor x, torch::Tensor mask) {
    auto xc = x.contiguous();
    auto mc = mask.contiguous();
    const int64_t B = xc.size(0), T = xc.size(1), H = xc.size(2);
    auto y = torch::zeros({B, H}, xc.options());
    const float* xd = xc.data_ptr<float>();
    const int64_t* md = mc.data_ptr<int64_t>();
    float* yd = y.data_ptr<float>();
    constexpr int64_t CHUNK = 256;
    const int64_t chunks = (H + CHUNK - 1) / CHUNK;
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t c = 0; c < chunks; ++c) {
            const int64_t h0 = c * CHUNK, h1 = std::min(H, h0 + CHUNK);
            float count = 0.0f;
            float* out = yd + b * H;
            for (int64_t t = 0; t < T; ++t) {
                if (md[b * T + t] == 0) continue;
                count += 1.0f;
                const float* tok = xd + (b * T + t) * H;
                for (int64_t h = h0; h < h1; ++h) out[h] += tok[h];
            }
            const float denom = std::max(count, 1e-9f);
            for (int64_t h = h0; h < h1; ++h) out[h] /= denom;
        }
    }
    return y;
}
"""

_pool = load_inline(
    name="honest_masked_mean_pool_chunks",
    cpp_sources=SRC,
    functions=["masked_mean"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return _pool.masked_mean(x, mask)
