"""Fused residual add + LayerNorm with a one-pass variance, E[v^2] - E[v]^2.

One pass over the row gathers the sum and the sum of squares, so only two
passes run instead of three. Both terms are about mean^2 in size; when
|mean| >> std (the residual stream at offset 100) float32 rounding of the sum
of squares is as large as the variance itself and the output is far off.
Exact enough on zero-mean rows.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/csrc/utils/pybind.h>

#include <cmath>

static void normalize_row(const float* x, const float* r, const float* w, const float* b,
                          float* out, int64_t n, float eps) {
    float sum = 0.f;
    float square_sum = 0.f;
    #pragma omp simd reduction(+:sum, square_sum)
    for (int64_t j = 0; j < n; ++j) {
        const float v = x[j] + r[j];
        out[j] = v;
        sum += v;
        square_sum += v * v;
    }
    const float mean = sum / static_cast<float>(n);
    const float var = square_sum / static_cast<float>(n) - mean * mean;
    const float rstd = 1.f / std::sqrt(var + eps);
    #pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
        out[j] = (out[j] - mean) * rstd * w[j] + b[j];
    }
}

at::Tensor add_layernorm(const at::Tensor& x, const at::Tensor& residual,
                         const at::Tensor& weight, const at::Tensor& bias, double eps) {
    for (const at::Tensor* t : {&x, &residual, &weight, &bias}) {
        TORCH_CHECK(t->scalar_type() == at::kFloat && t->device().is_cpu(),
                    "float32 CPU tensors expected");
    }
    TORCH_CHECK(x.sizes() == residual.sizes(), "x and residual shapes differ");
    auto xc = x.contiguous();
    auto rc = residual.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int64_t n = xc.size(-1);
    TORCH_CHECK(n > 0 && wc.numel() == n && bc.numel() == n, "bad normalized shape");
    auto out = at::empty_like(xc);
    const int64_t rows = xc.numel() / n;
    const float* px = xc.data_ptr<float>();
    const float* pr = rc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float feps = static_cast<float>(eps);
    const int threads = at::get_num_threads();
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
        normalize_row(px + i * n, pr + i * n, pw, pb, po + i * n, n, feps);
    }
    return out;
}
"""

_ext = load_inline(
    name="bw_cpu_add_layernorm_one_pass",
    cpp_sources=_SOURCE,
    functions=["add_layernorm"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    no_implicit_headers=True,
    with_pytorch_error_handling=False,
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return _ext.add_layernorm(
            x, residual, self.norm.weight.detach(), self.norm.bias.detach(), self.norm.eps
        )
