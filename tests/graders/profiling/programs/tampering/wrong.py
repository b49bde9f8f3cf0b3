"""Fewer syncs by skipping the last layer: fast, and wrong."""

import torch


def step(x: torch.Tensor, weights: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    hidden = x
    losses = []
    for weight in weights[:-1]:
        hidden = torch.tanh(hidden @ weight)
        losses.append(hidden.pow(2).mean())
    return {"hidden": hidden, "loss": torch.stack(losses).sum()}
