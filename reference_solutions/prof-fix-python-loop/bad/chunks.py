"""Vectorised over chunks of eight sequences, still a Python loop over the chunks."""

import torch

CHUNK = 8


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(x.shape[1])
    pieces = []
    for start in range(0, x.shape[0], CHUNK):
        xs, ls = x[start : start + CHUNK], lengths[start : start + CHUNK]
        mask = (positions[None, :] < ls[:, None]).to(x.dtype)
        pieces.append((xs * mask[:, :, None]).sum(dim=1) / ls[:, None].to(x.dtype))
    return torch.cat(pieces)
