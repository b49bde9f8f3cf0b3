"""Residual add + LayerNorm in one C++ kernel.

Each row: v = x + r is written into the output buffer while summing it (pass 1),
then the variance is accumulated around the mean in double (pass 2), and the
normalised, scaled row overwrites v (pass 3). Rows are independent, so OpenMP
splits them across threads.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor add_layernorm(torch::Tensor x, torch::Tensor r, torch::Tensor w, torch::Tensor b,
                            double eps) {
    TORCH_CHECK(x.sizes() == r.sizes(), "x and residual differ in shape");
    auto xs = x.contiguous();
    auto rs = r.contiguous();
    auto out = torch::empty_like(xs);
    const int64_t rows = xs.size(0), width = xs.size(1);
    const float* xp = xs.data_ptr<float>();
    const float* rp = rs.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* op = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t row = 0; row < rows; ++row) {
        const float* a = xp + row * width;
        const float* c = rp + row * width;
        float* v = op + row * width;
        double total = 0.0;
        for (int64_t k = 0; k < width; ++k) {
            v[k] = a[k] + c[k];
            total += v[k];
        }
        const double mean = total / width;
        double spread = 0.0;
        for (int64_t k = 0; k < width; ++k) {
            const double d = v[k] - mean;
            spread += d * d;
        }
        const double inv_std = 1.0 / std::sqrt(spread / width + eps);
        for (int64_t k = 0; k < width; ++k) {
            v[k] = static_cast<float>((v[k] - mean) * inv_std) * wp[k] + bp[k];
        }
    }
    return out;
}
"""

module = load_inline(
    name="honest_add_layernorm_rows",
    cpp_sources=CPP,
    functions=["add_layernorm"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, residual):
        return module.add_layernorm(
            x, residual, self.norm.weight.detach(), self.norm.bias.detach(), self.norm.eps
        )
