"""Never returns from its step."""

import torch


def step(x: torch.Tensor, weights: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    while True:
        x = x + 0
