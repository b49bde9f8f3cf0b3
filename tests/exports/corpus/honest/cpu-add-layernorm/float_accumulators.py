import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Plain float accumulators per row, but the variance is taken around the mean of
# the *summed* row (x + residual), never as E[v^2] - E[v]^2: rows offset by 100
# would lose every digit of their spread that way. The summed row is kept in a
# thread-local scratch vector so x and residual are each read once.
KERNEL_SRC = """
#include <torch/extension.h>
#include <vector>
#include <cmath>

torch::Tensor residual_layernorm(const torch::Tensor& input, const torch::Tensor& skip,
                                 const torch::Tensor& gamma, const torch::Tensor& beta, double epsilon) {
    auto in_c = input.contiguous();
    auto skip_c = skip.contiguous();
    auto result = torch::empty_like(in_c);
    const long n_rows = in_c.size(0);
    const long hidden = in_c.size(1);
    const float* in_p = in_c.data_ptr<float>();
    const float* skip_p = skip_c.data_ptr<float>();
    const float* g = gamma.data_ptr<float>();
    const float* bt = beta.data_ptr<float>();
    float* res_p = result.data_ptr<float>();
    #pragma omp parallel
    {
        std::vector<float> summed(hidden);
        #pragma omp for
        for (long r = 0; r < n_rows; ++r) {
            float s = 0.0f;
            for (long c = 0; c < hidden; ++c) {
                summed[c] = in_p[r * hidden + c] + skip_p[r * hidden + c];
                s += summed[c];
            }
            const float mu = s / hidden;
            float ss = 0.0f;
            for (long c = 0; c < hidden; ++c) {
                const float centred = summed[c] - mu;
                ss += centred * centred;
            }
            const float inv_sigma = 1.0f / std::sqrt(ss / hidden + (float)epsilon);
            for (long c = 0; c < hidden; ++c) {
                res_p[r * hidden + c] = (summed[c] - mu) * inv_sigma * g[c] + bt[c];
            }
        }
    }
    return result;
}
"""

fused = load_inline(
    name="residual_layernorm_float_acc",
    cpp_sources=KERNEL_SRC,
    functions=["residual_layernorm"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return fused.residual_layernorm(x, residual, self.norm.weight, self.norm.bias, self.norm.eps)
