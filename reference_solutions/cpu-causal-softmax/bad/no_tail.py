"""Causal softmax in C++ with a hand-unrolled 8-wide loop and no remainder loop.

Each row's visible logits are processed in groups of eight; the last
(i + 1) % 8 of them are never exponentiated or normalised, so their outputs
keep whatever the output buffer held. Rows whose length is a multiple of 8
are right.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cmath>

torch::Tensor causal_softmax(torch::Tensor x, double scale) {
    auto xc = x.contiguous();
    auto y = torch::zeros_like(xc);
    const int64_t n = xc.size(-1);
    const int64_t rows = xc.numel() / n;
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    const float s = static_cast<float>(scale);
    #pragma omp parallel for
    for (int64_t row = 0; row < rows; ++row) {
        const float* xr = src + row * n;
        float* yr = dst + row * n;
        const int64_t visible = row % n + 1;
        const int64_t blocked = visible / 8 * 8;
        float m = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) m = std::max(m, xr[j] * s);
        float sum = 0.0f;
        for (int64_t j = 0; j < blocked; j += 8) {
            for (int k = 0; k < 8; ++k) {
                yr[j + k] = std::exp(xr[j + k] * s - m);
                sum += yr[j + k];
            }
        }
        for (int64_t j = 0; j < blocked; ++j) yr[j] /= sum;
    }
    return y;
}
"""

_ext = load_inline(
    name="bw_cpu_causal_softmax_no_tail",
    cpp_sources=_SOURCE,
    functions=["causal_softmax"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.causal_softmax(x, self.scale)
