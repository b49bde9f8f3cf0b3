"""The report that came in: decode outputs go wrong for one step whenever a
sequence's length reaches a multiple of the block size."""

import torch

from paged_kv_cache import PagedKVCache, paged_decode_attention

HEAD_DIM = 8


def _decode(cache, seq_id, prompt_len, steps, generator):
    """Prefill a random prompt, then run ``steps`` decode steps; each step appends
    the new token's key and value and attends from its query over the cache."""
    cache.add_sequence(seq_id)
    cache.append(
        seq_id,
        torch.randn(prompt_len, HEAD_DIM, generator=generator),
        torch.randn(prompt_len, HEAD_DIM, generator=generator),
    )
    outputs = []
    for _ in range(steps):
        query, key, value = torch.randn(3, 1, HEAD_DIM, generator=generator)
        cache.append(seq_id, key, value)
        outputs.append(paged_decode_attention(query[0], cache, seq_id))
    return torch.stack(outputs)


def test_decode_across_block_boundary():
    # Lengths 14 to 19 with blocks of 16: the step at length 16 comes out wrong.
    generator = torch.Generator().manual_seed(0)
    cache = PagedKVCache(num_blocks=8, block_size=16, head_dim=HEAD_DIM)
    return _decode(cache, 0, prompt_len=13, steps=6, generator=generator)


def test_decode_within_one_block():
    generator = torch.Generator().manual_seed(1)
    cache = PagedKVCache(num_blocks=8, block_size=16, head_dim=HEAD_DIM)
    return _decode(cache, 0, prompt_len=3, steps=6, generator=generator)
