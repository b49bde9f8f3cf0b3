"""Causal attention, flash style: one program per (query block, batch x head).

Scores are computed a key block at a time with tl.dot and never stored; the
softmax is kept online (running max m_i, running denominator l_i) in base 2,
so exp2 can be used. Key blocks entirely after the query block are skipped by
the loop bound.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attn_fwd(
    Q, K, V, O, seq_len, sm_scale, stride_bh, stride_s,
    HEAD_DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_KV: tl.constexpr,
):
    q_block = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * stride_bh
    q_idx = q_block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    d_idx = tl.arange(0, HEAD_DIM)
    q_mask = q_idx < seq_len
    q = tl.load(
        Q + base + q_idx[:, None] * stride_s + d_idx[None, :], mask=q_mask[:, None], other=0.0
    )
    m_i = tl.full((BLOCK_Q,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_Q,), tl.float32)
    acc = tl.zeros((BLOCK_Q, HEAD_DIM), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # 1 / ln 2: softmax in base 2
    hi = tl.minimum((q_block + 1) * BLOCK_Q, seq_len)
    for start in range(0, hi, BLOCK_KV):
        kv_idx = start + tl.arange(0, BLOCK_KV)
        kv_mask = kv_idx < seq_len
        kv_offsets = base + kv_idx[:, None] * stride_s + d_idx[None, :]
        k = tl.load(K + kv_offsets, mask=kv_mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale
        allowed = (kv_idx[None, :] <= q_idx[:, None]) & kv_mask[None, :]
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(V + kv_offsets, mask=kv_mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        O + base + q_idx[:, None] * stride_s + d_idx[None, :],
        out.to(O.dtype.element_ty),
        mask=q_mask[:, None],
    )


def custom_kernel(data):
    q, k, v = data
    batch, heads, seq, head_dim = q.shape
    o = torch.empty_like(q)
    block = 64 if head_dim <= 64 else 32
    grid = (triton.cdiv(seq, block), batch * heads)
    _attn_fwd[grid](
        q, k, v, o, seq, 1.0 / math.sqrt(head_dim), seq * head_dim, head_dim,
        HEAD_DIM=head_dim, BLOCK_Q=block, BLOCK_KV=block,
    )
    return o
