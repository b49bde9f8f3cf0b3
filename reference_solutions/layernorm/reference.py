"""LayerNorm over the last dimension with weight and bias (GPU MODE format).

`ref_kernel` is PyTorch's fused layer_norm in the input dtype: the timing
baseline. Correctness is judged by `check_implementation` against a float64
evaluation, with a tolerance that grows with the row's conditioning
|mean| / std: rounding the mean to float32 alone costs ulp(mean) / std in the
output, for any float32 algorithm, PyTorch's included.
"""

import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# Per output dtype: (atol, rtol, conditioning factor).
TOLERANCES = {
    torch.float32: (1e-5, 1e-5, 1e-6),
    torch.float16: (1e-3, 1e-3, 1e-6),
}

Data = tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]


def generate_input(
    rows: int, hidden: int, dtype: str, scale: float, offset: float, eps: float, seed: int
) -> Data:
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    dt = getattr(torch, dtype)
    x = torch.randn(rows, hidden, device=DEVICE, generator=gen) * scale + offset
    weight = 1.0 + 0.1 * torch.randn(hidden, device=DEVICE, generator=gen)
    bias = 0.1 * torch.randn(hidden, device=DEVICE, generator=gen)
    return x.to(dt), weight.to(dt), bias.to(dt), eps


def ref_kernel(data: Data) -> torch.Tensor:
    x, weight, bias, eps = data
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def check_implementation(data: Data, output: object) -> tuple[bool, str]:
    x, weight, bias, eps = data
    if type(output) is not torch.Tensor:
        return False, f"expected a torch.Tensor, got {type(output).__name__}"
    if output.dtype != x.dtype or output.shape != x.shape or output.device != x.device:
        return False, (
            f"expected {x.dtype} {tuple(x.shape)} on {x.device}, "
            f"got {output.dtype} {tuple(output.shape)} on {output.device}"
        )
    x64, w64 = x.double(), weight.double()
    mean = x64.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt(x64.var(dim=-1, unbiased=False, keepdim=True) + eps)
    truth = (x64 - mean) * rstd * w64 + bias.double()
    atol, rtol, cond = TOLERANCES[x.dtype]
    limit = atol + rtol * truth.abs() + cond * mean.abs() * rstd * w64.abs()
    got = output.double()
    if not torch.isfinite(got).all():
        return False, f"{int((~torch.isfinite(got)).sum())} non-finite outputs"
    err = (got - truth).abs()
    bad = err > limit
    if bad.any():
        worst = int(torch.argmax(err / limit))
        row, col = divmod(worst, x.shape[-1])
        return False, (
            f"{int(bad.sum())} elements out of tolerance; worst at ({row}, {col}): "
            f"got {got[row, col].item():.6g}, expected {truth[row, col].item():.6g}"
        )
    return True, ""
