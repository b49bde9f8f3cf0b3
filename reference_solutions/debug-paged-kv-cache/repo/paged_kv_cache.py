"""A paged key/value cache for autoregressive decoding, and single-head decode
attention over it.

The keys and values of every running sequence live in one pool of fixed-size
blocks of ``block_size`` token slots. Each sequence has a block table, the list
of the physical blocks it owns: its tokens ``i * block_size`` to
``(i + 1) * block_size - 1`` (logical block ``i``) live in physical block
``block_table[i]``. A sequence takes a block from the free list when its first
token is written there, so the blocks of different sequences interleave in the
pool, and a block freed by a finished sequence is reused (with that sequence's
old contents still in it) by the next one.
"""

import math

import torch


class PagedKVCache:
    def __init__(
        self, num_blocks: int, block_size: int, head_dim: int, dtype: torch.dtype = torch.float32
    ) -> None:
        self.block_size = block_size
        self.head_dim = head_dim
        self.key_blocks = torch.zeros(num_blocks, block_size, head_dim, dtype=dtype)
        self.value_blocks = torch.zeros(num_blocks, block_size, head_dim, dtype=dtype)
        self.free_blocks = list(range(num_blocks))
        self.block_tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}

    def add_sequence(self, seq_id: int) -> None:
        self.block_tables[seq_id] = []
        self.lengths[seq_id] = 0

    def free_sequence(self, seq_id: int) -> None:
        """Return the sequence's blocks to the free list (their contents stay)."""
        self.free_blocks.extend(self.block_tables.pop(seq_id))
        del self.lengths[seq_id]

    def _allocate_block(self) -> int:
        if not self.free_blocks:
            raise RuntimeError("the KV cache is out of blocks")
        return self.free_blocks.pop(0)

    def append(self, seq_id: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Write the keys and values, (n, head_dim) each, of the sequence's next n
        tokens: a whole prompt at prefill, one token per decode step."""
        table = self.block_tables[seq_id]
        start = self.lengths[seq_id]
        end = start + keys.shape[0]
        while len(table) * self.block_size < end:
            table.append(self._allocate_block())
        for position in range(start, end):
            block = table[position // self.block_size]
            slot = position % self.block_size
            self.key_blocks[block, slot] = keys[position - start]
            self.value_blocks[block, slot] = values[position - start]
        self.lengths[seq_id] = end


def paged_decode_attention(query: torch.Tensor, cache: PagedKVCache, seq_id: int) -> torch.Tensor:
    """softmax(K q / sqrt(d)) V for one query vector (head_dim,) over every cached
    token of the sequence, reading the cache block by block through its table."""
    length = cache.lengths[seq_id]
    table = cache.block_tables[seq_id]
    block_size = cache.block_size
    num_blocks = math.ceil(length / block_size)
    scores, values = [], []
    for logical, block in enumerate(table[:num_blocks]):
        # Every block but the last is full; the last holds what is left over.
        if logical < num_blocks - 1:
            used = block_size
        else:
            used = length % block_size
        scores.append(cache.key_blocks[block, :used] @ query)
        values.append(cache.value_blocks[block, :used])
    weights = torch.softmax(torch.cat(scores) / math.sqrt(query.shape[-1]), dim=0)
    return weights @ torch.cat(values)
