"""The report that came in: attention weights turn into NaN when the scores are large."""

import torch

from softmax import attention_weights, softmax


def test_large_scores_stay_finite():
    logits = torch.tensor([[100.0, 99.0, 98.0], [1000.0, 0.0, -1000.0]])
    weights = softmax(logits)
    assert torch.isfinite(weights).all(), f"non-finite weights: {weights}"
    return weights


def test_small_scores():
    logits = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    return softmax(logits)


def test_causal_attention():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 5, 8, generator=generator)
    k = torch.randn(2, 5, 8, generator=generator)
    return attention_weights(q, k, causal=True)
