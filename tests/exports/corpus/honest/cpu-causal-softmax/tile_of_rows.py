import torch
from torch.utils.cpp_extension import load_inline

# Work is split by (matrix, block of 16 query rows) so threads get even shares
# of the triangle; inside a block each row is exponentiated into a small stack
# buffer first, which lets the compiler vectorise the normalisation loop.
cpp_source = """
#include <torch/extension.h>
#include <cmath>
#include <algorithm>
#include <vector>

at::Tensor causal_softmax_tiles(at::Tensor x, double scale_d) {
    at::Tensor input = x.contiguous();
    at::Tensor result = at::zeros_like(input);
    const long seq = input.size(-1);
    const long mats = input.numel() / (seq * seq);
    const long tiles = (seq + 15) / 16;
    const float scale = (float)scale_d;
    const float* in_base = input.data_ptr<float>();
    float* out_base = result.data_ptr<float>();
    #pragma omp parallel
    {
        std::vector<float> buf(seq);
        #pragma omp for collapse(2) schedule(dynamic, 4)
        for (long m = 0; m < mats; m++) {
            for (long t = 0; t < tiles; t++) {
                for (long q = t * 16; q < std::min(seq, t * 16 + 16); q++) {
                    const float* xi = in_base + (m * seq + q) * seq;
                    float* yi = out_base + (m * seq + q) * seq;
                    float hi = xi[0] * scale;
                    for (long k = 1; k <= q; k++) hi = std::max(hi, xi[k] * scale);
                    float acc = 0.f;
                    for (long k = 0; k <= q; k++) {
                        buf[k] = std::exp(xi[k] * scale - hi);
                        acc += buf[k];
                    }
                    float r = 1.f / acc;
                    for (long k = 0; k <= q; k++) yi[k] = buf[k] * r;
                }
            }
        }
    }
    return result;
}
"""

kernels = load_inline(
    name="causal_softmax_tiles_v1",
    cpp_sources=cpp_source,
    functions=["causal_softmax_tiles"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = float(scale)

    def forward(self, x):
        return kernels.causal_softmax_tiles(x, self.scale)
