"""Flash-attention forward (causal), the diagonal tile apart.

Grid: (ceil(seq / BM), batch * heads). Each program streams key/value tiles
up to and including its diagonal tile. The diagonal tile is the only one that
needs the causal mask, so it is handled after the loop over full tiles.
fp32 accumulators; p is cast to the value dtype for the second dot.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _tile(acc, m_run, l_run, q, k_tile, v_tile, offs_m, offs_n, scale, seq, DIAGONAL: tl.constexpr):
    logits = tl.dot(q, tl.trans(k_tile), input_precision="ieee") * scale
    keep = offs_n[None, :] < seq
    if DIAGONAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None])
    logits = tl.where(keep, logits, float("-inf"))
    m_next = tl.maximum(m_run, tl.max(logits, 1))
    corr = tl.exp(m_run - m_next)
    probs = tl.exp(logits - m_next[:, None])
    l_run = l_run * corr + tl.sum(probs, 1)
    acc = acc * corr[:, None] + tl.dot(probs.to(v_tile.dtype), v_tile, input_precision="ieee")
    return acc, m_next, l_run


@triton.jit
def flash_causal(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, HD: tl.constexpr, BM: tl.constexpr):
    start_m = tl.program_id(0) * BM
    plane = tl.program_id(1).to(tl.int64) * seq * HD
    dims = tl.arange(0, HD)
    offs_m = start_m + tl.arange(0, BM)
    q = tl.load(q_ptr + plane + offs_m[:, None] * HD + dims[None, :], mask=offs_m[:, None] < seq, other=0.0)
    m_run = tl.full([BM], float("-inf"), tl.float32)
    l_run = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, HD], tl.float32)
    for start_n in range(0, start_m, BM):
        offs_n = start_n + tl.arange(0, BM)
        kv = plane + offs_n[:, None] * HD + dims[None, :]
        kt = tl.load(k_ptr + kv)
        vt = tl.load(v_ptr + kv)
        acc, m_run, l_run = _tile(acc, m_run, l_run, q, kt, vt, offs_m, offs_n, scale, seq, False)
    offs_n = start_m + tl.arange(0, BM)
    kv = plane + offs_n[:, None] * HD + dims[None, :]
    kt = tl.load(k_ptr + kv, mask=offs_n[:, None] < seq, other=0.0)
    vt = tl.load(v_ptr + kv, mask=offs_n[:, None] < seq, other=0.0)
    acc, m_run, l_run = _tile(acc, m_run, l_run, q, kt, vt, offs_m, offs_n, scale, seq, True)
    out = (acc / l_run[:, None]).to(o_ptr.dtype.element_ty)
    tl.store(o_ptr + plane + offs_m[:, None] * HD + dims[None, :], out, mask=offs_m[:, None] < seq)


def custom_kernel(data):
    q, k, v = data
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    bm = 32 if D >= 128 else 64
    flash_causal[(triton.cdiv(S, bm), B * H)](q, k, v, o, S, D ** -0.5, HD=D, BM=bm)
    return o
