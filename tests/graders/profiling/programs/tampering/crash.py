"""Aborts the process in the middle of a step."""

import os

import torch


def step(x: torch.Tensor, weights: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    os.abort()
