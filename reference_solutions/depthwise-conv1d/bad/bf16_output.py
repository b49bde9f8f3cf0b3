"""Depthwise conv1d that writes its fp32 result as bfloat16.

The convolution itself is right; storing bf16 halves the bytes written, which
on a bandwidth-bound kernel looks like a speedup. But the output dtype is not
the input's, and the values carry bf16 rounding (about 3 significant digits).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_L = 256


@triton.jit
def _dwconv1d_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    channels,
    length,
    out_length,
    padding,
    K: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    row = tl.program_id(0)
    c = row % channels
    offs_l = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    acc = tl.zeros((BLOCK_L,), dtype=tl.float32)
    for k in tl.static_range(K):
        pos = offs_l - padding + k
        x = tl.load(x_ptr + row * length + pos, mask=(pos >= 0) & (pos < length), other=0.0)
        acc += x.to(tl.float32) * tl.load(w_ptr + c * K + k).to(tl.float32)
    acc += tl.load(b_ptr + c).to(tl.float32)
    tl.store(out_ptr + row * out_length + offs_l, acc.to(tl.bfloat16), mask=offs_l < out_length)


class ModelNew(nn.Module):
    def __init__(self, channels: int, kernel_size: int, padding: int, dtype: str) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            channels,
            channels,
            kernel_size,
            padding=padding,
            groups=channels,
            bias=True,
            dtype=getattr(torch, dtype),
        )
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        batch, channels, length = x.shape
        k = self.conv.weight.shape[-1]
        out_length = length + 2 * self.padding - k + 1
        out = torch.empty((batch, channels, out_length), dtype=torch.bfloat16, device=x.device)
        grid = (batch * channels, triton.cdiv(out_length, BLOCK_L))
        _dwconv1d_kernel[grid](
            x,
            self.conv.weight.reshape(channels, k).contiguous(),
            self.conv.bias,
            out,
            channels,
            length,
            out_length,
            self.padding,
            K=k,
            BLOCK_L=BLOCK_L,
        )
        return out
