import torch

from normalization import LayerNorm, layer_norm, rms_norm


def _activations(seed, shape, mean, std, dtype=torch.float16):
    generator = torch.Generator().manual_seed(seed)
    x = (mean + std * torch.randn(*shape, generator=generator)).to(dtype)
    hidden = shape[-1]
    weight = (1.0 + 0.1 * torch.randn(hidden, generator=generator)).to(dtype)
    bias = (0.1 * torch.randn(hidden, generator=generator)).to(dtype)
    return x, weight, bias


def test_rms_norm_large_magnitudes(seed):
    # |x| in the hundreds: x * x alone is past float16's largest finite value (65504).
    x, weight, _ = _activations(seed, (6, 96), 0.0, 400.0)
    return rms_norm(x, weight)


def test_large_offset_small_spread(seed):
    # No square overflows here (x ~ 120 +- 5), but E[x^2] and E[x]^2 agree in their
    # leading digits: their float16 difference is mostly rounding error.
    x, weight, bias = _activations(seed, (6, 96), 120.0, 5.0)
    return layer_norm(x, weight, bias)


def test_wide_range_batched_module(seed):
    # Token activations centred on zero but spread over +-2000, through the module
    # on a (batch, tokens, hidden) tensor, the way the model calls it.
    x, weight, bias = _activations(seed, (2, 5, 128), 0.0, 600.0)
    norm = LayerNorm(128).half()
    with torch.no_grad():
        norm.weight.copy_(weight)
        norm.bias.copy_(bias)
        return norm(x)


def test_float32_inputs(seed):
    x, weight, bias = _activations(seed, (5, 48), 1.0, 3.0, torch.float32)
    return {"layer_norm": layer_norm(x, weight, bias), "rms_norm": rms_norm(x, weight)}


def test_rms_norm_unit_scale(seed):
    x, weight, _ = _activations(seed, (8, 80), 0.0, 1.0)
    return rms_norm(x, weight, eps=1e-5)
