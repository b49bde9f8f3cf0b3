"""Inter-rater agreement: Krippendorff's alpha and Cohen's kappa.

Plain functions over plain values, no Django. ``None`` means "not defined for
these data" (no pairable values, or no variation to agree about), which is
different from an agreement of 0.

Krippendorff's alpha follows K. Krippendorff, "Computing Krippendorff's
Alpha-Reliability" (2011): values are tallied in a coincidence matrix, where
each unit coded by m coders contributes every ordered pair of its values with
weight 1 / (m - 1), and

    alpha = 1 - D_o / D_e = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck)

with ``d_ck`` the squared difference function of the level of measurement.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

NOMINAL = "nominal"
ORDINAL = "ordinal"
INTERVAL = "interval"
LEVELS = (NOMINAL, ORDINAL, INTERVAL)

Difference = Callable[[Any, Any], float]


def coincidences(units: Iterable[Sequence[Any]]) -> dict[tuple[Any, Any], float]:
    """The coincidence matrix ``o[(c, k)]`` of the pairable values (``None`` is missing)."""
    matrix: dict[tuple[Any, Any], float] = defaultdict(float)
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue  # a value nobody else coded cannot agree or disagree
        for i, c in enumerate(values):
            for j, k in enumerate(values):
                if i != j:
                    matrix[(c, k)] += 1 / (m - 1)
    return dict(matrix)


def _difference(level: str, totals: dict[Any, float]) -> Difference:
    if level == NOMINAL:
        return lambda c, k: 0.0 if c == k else 1.0
    if level == INTERVAL:
        return lambda c, k: float(c - k) ** 2
    if level == ORDINAL:
        ranked = sorted(totals)
        position = {value: i for i, value in enumerate(ranked)}
        cumulative = [0.0]
        for value in ranked:
            cumulative.append(cumulative[-1] + totals[value])

        def ordinal(c: Any, k: Any) -> float:
            low, high = sorted((position[c], position[k]))
            between = cumulative[high + 1] - cumulative[low]  # n_g for g from c to k
            return (between - (totals[c] + totals[k]) / 2) ** 2

        return ordinal
    raise ValueError(f"level must be one of {', '.join(LEVELS)}")


def krippendorff_alpha(units: Iterable[Sequence[Any]], level: str = INTERVAL) -> float | None:
    """Alpha over reliability data given as units, each a sequence of the values
    its coders gave (``None`` where a coder gave none). Interval and ordinal
    levels need numbers (ordinal: anything sortable)."""
    matrix = coincidences(units)
    totals: dict[Any, float] = defaultdict(float)
    for (c, _k), weight in matrix.items():
        totals[c] += weight
    n = sum(totals.values())
    if n <= 1:
        return None
    delta = _difference(level, dict(totals))
    observed = sum(weight * delta(c, k) for (c, k), weight in matrix.items())
    expected = sum(totals[c] * totals[k] * delta(c, k) for c in totals for k in totals)
    if expected == 0:
        return None  # every value is the same: nothing to agree about
    return 1 - (n - 1) * observed / expected


def cohen_kappa(pairs: Iterable[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters over the items both rated: (p_o - p_e) / (1 - p_e)."""
    pairs = list(pairs)
    n = len(pairs)
    if n == 0:
        return None
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    observed = sum(1 for a, b in pairs if a == b) / n
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    if expected == 1:
        return None  # both raters always gave the same single category
    return (observed - expected) / (1 - expected)
