import torch

from softmax import attention_weights, softmax


def _logits(seed, rows, cols, scale):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator) * scale


def test_huge_logits(seed):
    return softmax(_logits(seed, 16, 37, 500.0))


def test_shifted_logits(seed):
    # A large common offset: softmax must not change.
    return softmax(_logits(seed, 8, 64, 3.0) + 120.0)


def test_float16_logits(seed):
    return softmax(_logits(seed, 8, 33, 8.0).half())


def test_ordinary_logits(seed):
    return softmax(_logits(seed, 32, 17, 1.0))


def test_attention_large_queries(seed):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(3, 7, 16, generator=generator) * 40.0
    k = torch.randn(3, 7, 16, generator=generator) * 40.0
    return attention_weights(q, k, causal=True)


def test_attention_ordinary(seed):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 9, 8, generator=generator)
    k = torch.randn(2, 9, 8, generator=generator)
    return attention_weights(q, k, causal=False)
