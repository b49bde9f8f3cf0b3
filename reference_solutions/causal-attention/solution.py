"""Causal attention forward, FlashAttention-2 style, in Triton (GPU MODE format).

One program owns BLOCK_M query rows of one (batch, head) and streams the keys
and values past them in BLOCK_N blocks, keeping a running row max m, a running
denominator l and an unnormalised fp32 accumulator: the S x S score matrix is
never written to memory. Exponentials are base 2 with log2(e) folded into the
softmax scale.

Causality skips work: key blocks entirely in the future of the query block
are never visited, key blocks entirely in its past need no mask, and only the
blocks on the diagonal apply one. Every query row sees key 0 in its first
block, so the running max is finite after the first step and no row computes
exp(-inf - -inf).

fp16/bf16 inputs use tensor-core dots with fp32 accumulation and round the
probabilities to the input dtype for the P @ V product, as FlashAttention
does; fp32 inputs use full-precision (IEEE) dots rather than TF32.
"""

import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attend_block(
    acc,
    m_i,
    l_i,
    q,
    k_ptrs,
    v_ptrs,
    start_n,
    offs_m,
    offs_n,
    seq,
    qk_scale,
    CAUSAL_MASK: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One online-softmax step over keys start_n .. start_n + BLOCK_N."""
    cols = start_n + offs_n
    in_seq = cols < seq
    k = tl.load(k_ptrs, mask=in_seq[:, None], other=0.0)
    v = tl.load(v_ptrs, mask=in_seq[:, None], other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
    if CAUSAL_MASK:
        keep = (offs_m[:, None] >= cols[None, :]) & in_seq[None, :]
        s = tl.where(keep, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    p = tl.exp2(s - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)  # rescales what was accumulated under the old max
    l_i = l_i * alpha + tl.sum(p, axis=1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return acc, m_new, l_i


@triton.jit
def _causal_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    stride_b,
    stride_h,
    stride_s,
    heads,
    seq,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    base = (bh // heads).to(tl.int64) * stride_b + (bh % heads).to(tl.int64) * stride_h
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    q = tl.load(
        q_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :],
        mask=(offs_m < seq)[:, None],
        other=0.0,
    )
    kv_offs = offs_n[:, None] * stride_s + offs_d[None, :]

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    # Key blocks wholly before this query block: no mask needed.
    for start_n in range(0, start_m, BLOCK_N):
        ptr_off = base + start_n * stride_s + kv_offs
        acc, m_i, l_i = _attend_block(
            acc,
            m_i,
            l_i,
            q,
            k_ptr + ptr_off,
            v_ptr + ptr_off,
            start_n,
            offs_m,
            offs_n,
            seq,
            qk_scale,
            CAUSAL_MASK=False,
            PRECISION=PRECISION,
        )
    # Key blocks on the diagonal: mask the future and the tail past seq.
    for start_n in range(start_m, tl.minimum(start_m + BLOCK_M, seq), BLOCK_N):
        ptr_off = base + start_n * stride_s + kv_offs
        acc, m_i, l_i = _attend_block(
            acc,
            m_i,
            l_i,
            q,
            k_ptr + ptr_off,
            v_ptr + ptr_off,
            start_n,
            offs_m,
            offs_n,
            seq,
            qk_scale,
            CAUSAL_MASK=True,
            PRECISION=PRECISION,
        )

    out = acc / l_i[:, None]
    tl.store(
        o_ptr + base + offs_m[:, None] * stride_s + offs_d[None, :],
        out.to(o_ptr.dtype.element_ty),
        mask=(offs_m < seq)[:, None],
    )


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = (t.contiguous() for t in data)
    batch, heads, seq, head_dim = q.shape
    if head_dim & (head_dim - 1) or head_dim < 16:
        raise ValueError("head_dim must be a power of two >= 16")
    o = torch.empty_like(q)
    if q.numel() == 0:
        return o
    block_m, block_n = 128, 64  # BLOCK_M must be a multiple of BLOCK_N (diagonal split)
    grid = (triton.cdiv(seq, block_m), batch * heads)
    _causal_attention_kernel[grid](
        q,
        k,
        v,
        o,
        q.stride(0),
        q.stride(1),
        q.stride(2),
        heads,
        seq,
        LOG2E / math.sqrt(head_dim),
        HEAD_DIM=head_dim,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        # Only fp32 dots are affected: "ieee" keeps them out of TF32; "tf32" is the
        # default and a no-op for fp16/bf16 operands.
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=8 if head_dim >= 128 else 4,
        num_stages=3,
    )
    return o
