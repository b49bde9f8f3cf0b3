"""Attention helpers: a softmax over the last dimension and the attention weights
built on it."""

import torch


def softmax(logits: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension."""
    weights = torch.exp(logits)
    return weights / weights.sum(dim=-1, keepdim=True)


def attention_weights(query: torch.Tensor, key: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)), optionally with a causal mask."""
    scores = query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5
    if causal:
        n, m = scores.shape[-2:]
        mask = torch.ones(n, m, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return softmax(scores)
