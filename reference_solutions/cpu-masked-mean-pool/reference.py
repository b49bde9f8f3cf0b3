"""Reference: masked mean pooling of token embeddings (CPU).

Sentence-embedding models average the hidden states of the real tokens and
ignore padding: y[b] = sum_t mask[b, t] * x[b, t] / max(sum_t mask[b, t], 1e-9).
This is the eager PyTorch form, which multiplies the whole tensor by the mask
before reducing it.
"""

import torch
import torch.nn as nn

batch = 16
seq = 512
hidden = 768


class Model(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.unsqueeze(-1).to(x.dtype)
        summed = (x * m).sum(dim=1)
        counts = m.sum(dim=1).clamp(min=1e-9)
        return summed / counts


def get_inputs() -> list[torch.Tensor]:
    """x of shape (batch, seq, hidden); an int64 0/1 mask of shape (batch, seq).

    Lengths are uniform in [0, seq]; the first sequence is all padding and the
    last has no padding. Even rows are right-padded, odd rows left-padded.
    """
    x = torch.randn(batch, seq, hidden)
    lengths = torch.randint(0, seq + 1, (batch,))
    lengths[0] = 0
    lengths[-1] = seq
    mask = (torch.arange(seq)[None, :] < lengths[:, None]).to(torch.int64)
    mask[1::2] = mask[1::2].flip(-1)
    return [x, mask]


def get_init_inputs() -> list:
    return []
