import torch

from paged_kv_cache import PagedKVCache, paged_decode_attention

HEAD_DIM = 16


def _tokens(generator, n):
    keys = torch.randn(n, HEAD_DIM, generator=generator)
    values = torch.randn(n, HEAD_DIM, generator=generator)
    return keys, values


def _run(cache, prompts, steps, generator):
    """Prefill each sequence's prompt, then decode ``steps`` tokens for every
    sequence in turn (so their blocks interleave in the pool). Returns every
    step's output, per sequence."""
    outputs = {seq_id: [] for seq_id in prompts}
    for seq_id, prompt_len in prompts.items():
        cache.add_sequence(seq_id)
        cache.append(seq_id, *_tokens(generator, prompt_len))
    for _ in range(steps):
        for seq_id in prompts:
            query = torch.randn(HEAD_DIM, generator=generator)
            cache.append(seq_id, *_tokens(generator, 1))
            outputs[seq_id].append(paged_decode_attention(query, cache, seq_id))
    return [torch.stack(outputs[seq_id]) for seq_id in prompts]


def _snapshot(cache, outputs):
    """The outputs with the cache's raw state: a write to the wrong slot or an
    extra block taken shows here even when attention hides it."""
    return {
        "outputs": outputs,
        "key_blocks": cache.key_blocks,
        "value_blocks": cache.value_blocks,
        "block_tables": [cache.block_tables[s] for s in sorted(cache.block_tables)],
        "lengths": [cache.lengths[s] for s in sorted(cache.lengths)],
    }


def test_interleaved_sequences(seed):
    generator = torch.Generator().manual_seed(seed)
    cache = PagedKVCache(num_blocks=12, block_size=8, head_dim=HEAD_DIM)
    outputs = _run(cache, {3: 9, 7: 11, 9: 14}, steps=7, generator=generator)
    return _snapshot(cache, outputs)


def test_small_blocks_long_decode(seed):
    generator = torch.Generator().manual_seed(seed)
    cache = PagedKVCache(num_blocks=8, block_size=4, head_dim=HEAD_DIM)
    outputs = _run(cache, {0: 2}, steps=14, generator=generator)
    return _snapshot(cache, outputs)


def test_prompt_one_short_of_a_block(seed):
    generator = torch.Generator().manual_seed(seed)
    cache = PagedKVCache(num_blocks=6, block_size=32, head_dim=HEAD_DIM)
    outputs = _run(cache, {0: 31, 1: 63}, steps=3, generator=generator)
    return _snapshot(cache, outputs)


def test_lengths_off_the_boundary(seed):
    # Several blocks per sequence, but no decode step lands on a multiple of 16.
    generator = torch.Generator().manual_seed(seed)
    cache = PagedKVCache(num_blocks=10, block_size=16, head_dim=HEAD_DIM)
    outputs = _run(cache, {0: 17, 1: 40}, steps=5, generator=generator)
    return _snapshot(cache, outputs)


def test_reused_blocks_hold_stale_tokens(seed):
    # A finished sequence's blocks go to the next one with its old keys and
    # values still in them: only the slots written since may be read.
    generator = torch.Generator().manual_seed(seed)
    cache = PagedKVCache(num_blocks=3, block_size=8, head_dim=HEAD_DIM)
    cache.add_sequence(0)
    cache.append(0, *_tokens(generator, 22))
    cache.free_sequence(0)
    outputs = _run(cache, {1: 9}, steps=5, generator=generator)
    return _snapshot(cache, outputs)
