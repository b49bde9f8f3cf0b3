"""Keeps the per-layer reads, made through NumPy (t.numpy(), np.asarray(t)), which
record only aten::detach or nothing at all."""

import numpy as np
import torch


def step(x: torch.Tensor, weights: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    hidden = x
    total = 0.0
    for index, weight in enumerate(weights):
        hidden = torch.tanh(hidden @ weight)
        loss = hidden.pow(2).mean()
        total += float(loss.numpy()) if index % 2 else float(np.asarray(loss))
    return {"hidden": hidden, "loss": torch.tensor(total)}
