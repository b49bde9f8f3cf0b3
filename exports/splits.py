"""Splits by task, never by row.

A task's split follows from the seed and its slug alone: SHA-256 of
``"{seed}:{slug}"`` read as a number in [0, 1) falls into one of the ratio
intervals train | validation | test. So every version and every submission of
a task lands in the same split; the same seed gives the same assignment on any
database; and a task keeps its split when other tasks come or go, so a later
snapshot never moves a test task into train. The price: with few tasks the
proportions are only roughly the ratios (the manifest counts tasks per split).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from .spec import SPLITS


def unit_interval(seed: int, key: str) -> float:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(task_slug: str, *, seed: int, ratios: Mapping[str, float]) -> str:
    point = unit_interval(seed, task_slug)
    edge = 0.0
    for name in SPLITS:
        edge += ratios.get(name, 0.0)
        if point < edge:
            return name
    # Rounding can leave the top of [0, 1) uncovered: it goes to the last split in use.
    return next(name for name in reversed(SPLITS) if ratios.get(name, 0.0) > 0)
