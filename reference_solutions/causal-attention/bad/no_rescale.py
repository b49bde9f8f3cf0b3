"""Online-softmax attention that forgets to rescale the accumulator.

The running max and the denominator are updated correctly, but what was
accumulated under an older, smaller max is never multiplied by
exp(m_old - m_new). With one key block (seq <= BLOCK_N) nothing needs
rescaling and the output is right; with more blocks, rows whose max rises
later come out wrong.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    base = tl.program_id(1) * seq * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        mask=(offs_m < seq)[:, None],
        other=0.0,
    )
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, tl.minimum(start_m + BLOCK_M, seq), BLOCK_N):
        cols = start_n + offs_n
        kv = base + cols[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv, mask=(cols < seq)[:, None], other=0.0)
        v = tl.load(v_ptr + kv, mask=(cols < seq)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale
        s = tl.where((offs_m[:, None] >= cols[None, :]) & (cols < seq)[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(p, axis=1)
        acc = acc + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        m_i = m_new
    tl.store(
        o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
        mask=(offs_m < seq)[:, None],
    )


def custom_kernel(data):
    q, k, v = (t.contiguous() for t in data)
    batch, heads, seq, head_dim = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(seq, 64), batch * heads)
    _attention_kernel[grid](
        q,
        k,
        v,
        o,
        seq,
        1.4426950408889634 / math.sqrt(head_dim),
        HEAD_DIM=head_dim,
        BLOCK_M=64,
        BLOCK_N=64,
    )
    return o
