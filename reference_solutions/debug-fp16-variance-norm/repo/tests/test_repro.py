"""The report that came in: the float16 LayerNorm returns NaN once the
activations reach a few hundred."""

import torch

from normalization import layer_norm


def _affine(hidden, generator):
    weight = 1.0 + 0.1 * torch.randn(hidden, generator=generator)
    bias = 0.1 * torch.randn(hidden, generator=generator)
    return weight.half(), bias.half()


def test_large_activations_stay_finite():
    # Residual-stream activations late in a long run: mean ~500, spread ~30.
    generator = torch.Generator().manual_seed(0)
    x = (500.0 + 30.0 * torch.randn(4, 256, generator=generator)).half()
    weight, bias = _affine(256, generator)
    out = layer_norm(x, weight, bias)
    assert torch.isfinite(out).all(), f"{int((~torch.isfinite(out)).sum())} non-finite outputs"
    return out


def test_unit_scale_activations():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(8, 64, generator=generator).half()
    weight, bias = _affine(64, generator)
    return layer_norm(x, weight, bias)
