"""The report that came in: rms_norm into a slice of a flat buffer overwrites the
tensor stored after it."""

import torch

from rmsnorm import rms_norm


def _packed(rows, cols, tail, generator):
    """A flat buffer holding the output followed by a neighbour tensor."""
    flat = torch.empty(rows * cols + tail)
    out = flat[: rows * cols].view(rows, cols)
    neighbour = flat[rows * cols :]
    neighbour.copy_(torch.randn(tail, generator=generator))
    return out, neighbour


def test_neighbour_is_untouched():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 100, generator=generator)
    weight = torch.randn(100, generator=generator)
    out, neighbour = _packed(4, 100, 64, generator)
    before = neighbour.clone()
    rms_norm(x, weight, out=out)
    assert torch.equal(neighbour, before), "rms_norm wrote past the end of its output"
    return out, neighbour


def test_power_of_two_rows():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(8, 64, generator=generator)
    weight = torch.randn(64, generator=generator)
    return rms_norm(x, weight)
