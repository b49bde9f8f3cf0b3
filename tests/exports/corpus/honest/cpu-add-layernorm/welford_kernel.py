import torch
from torch import nn
from torch.utils import cpp_extension

# Welford's running mean / M2 per row: a single read of x and residual for the
# statistics, numerically safe for rows whose mean dwarfs their spread (the
# residual + 100 case), then one more sweep to write the output.
source = """
#include <torch/extension.h>
#include <omp.h>
#include <cmath>

static void norm_one_row(const float* x, const float* res, const float* gamma,
                         const float* beta, float* y, long n, float eps) {
    float mean = 0.f, m2 = 0.f;
    for (long i = 0; i < n; i++) {
        float s = x[i] + res[i];
        y[i] = s;  // keep the sum: the second sweep reads it back from y
        float delta = s - mean;
        mean += delta / float(i + 1);
        m2 += delta * (s - mean);
    }
    float rstd = 1.f / std::sqrt(m2 / float(n) + eps);
    for (long i = 0; i < n; i++) {
        y[i] = (y[i] - mean) * rstd * gamma[i] + beta[i];
    }
}

at::Tensor fused_forward(at::Tensor x, at::Tensor res, at::Tensor gamma, at::Tensor beta, double eps) {
    x = x.contiguous();
    res = res.contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options());
    long rows = x.size(0), n = x.size(1);
    #pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; r++) {
        norm_one_row(x.data_ptr<float>() + r * n, res.data_ptr<float>() + r * n,
                     gamma.data_ptr<float>(), beta.data_ptr<float>(),
                     y.data_ptr<float>() + r * n, n, (float)eps);
    }
    return y;
}
"""

ext = cpp_extension.load_inline(
    "welford_add_layernorm_ext",
    cpp_sources=[source],
    functions=["fused_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    @torch.no_grad()
    def forward(self, x, residual):
        return ext.fused_forward(x, residual, self.norm.weight, self.norm.bias, self.norm.eps)
