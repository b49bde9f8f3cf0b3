"""Normalisation layers of the inference model: LayerNorm and RMSNorm over the
last dimension. The serving path runs the whole model, these layers included,
in float16."""

import torch


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension, with
    the biased variance, as ``torch.nn.LayerNorm``. Returns x's dtype."""
    mean = x.mean(dim=-1, keepdim=True)
    mean_square = (x * x).mean(dim=-1, keepdim=True)
    variance = mean_square - mean * mean
    return (x - mean) * torch.rsqrt(variance + eps) * weight + bias


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension. Returns x's dtype."""
    mean_square = (x * x).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(mean_square + eps) * weight


class LayerNorm(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.bias = torch.nn.Parameter(torch.zeros(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)
