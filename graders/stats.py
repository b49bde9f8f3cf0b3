"""Statistics for timings: medians, spread, confidence intervals, paired ratios.

Samples are per-call times of whole batches (a batch's time over its call
count), so they are few (6..30) and not normal: a busy or shared host makes
them skewed and sometimes bimodal. Two kinds of interval are used:

- per side, a percentile bootstrap of the median with a fixed seed (the same
  samples always give the same interval), for the report;
- for the speedup, the batches are taken in pairs (a reference batch and a
  submission batch run back to back, in alternating order), and the interval
  is that of the median of the pairs' log ratios by the sign test: it is
  exact whatever the distribution, and drift of the host's speed between
  pairs cancels within each pair.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95

# Two-sided Student t quantiles at 95% by degrees of freedom; above 30, the normal one.
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
    16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
    23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
}  # fmt: skip


def median(samples: Sequence[float]) -> float:
    if not samples:
        raise ValueError("median of no samples")
    return float(statistics.median(samples))


def spread(samples: Sequence[float]) -> float:
    """(max - min) / median: 0 for identical samples."""
    middle = median(samples)
    if middle <= 0:
        return 0.0 if max(samples) == min(samples) else math.inf
    return (max(samples) - min(samples)) / middle


def bootstrap_median_ci(
    samples: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the median."""
    if not samples:
        raise ValueError("interval of no samples")
    if len(samples) == 1:
        return (samples[0], samples[0])
    rng = random.Random(seed)
    n = len(samples)
    medians = sorted(statistics.median(rng.choices(samples, k=n)) for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0
    low = medians[math.floor(tail * (resamples - 1))]
    high = medians[math.ceil((1.0 - tail) * (resamples - 1))]
    return (float(low), float(high))


def t_mean_ci(samples: Sequence[float]) -> tuple[float, float]:
    """Student-t 95% interval of the mean."""
    if not samples:
        raise ValueError("interval of no samples")
    n = len(samples)
    mean = statistics.fmean(samples)
    if n == 1:
        return (mean, mean)
    quantile = _T95.get(n - 1, 1.960)
    half = quantile * statistics.stdev(samples) / math.sqrt(n)
    return (mean - half, mean + half)


def relative_half_width(samples: Sequence[float]) -> float:
    """Half the width of the median's interval over the median: the stopping rule."""
    if len(samples) < 2:
        return math.inf
    low, high = bootstrap_median_ci(samples, resamples=500)
    middle = median(samples)
    if middle <= 0:
        return math.inf
    return (high - low) / 2.0 / middle


def intervals_separate(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when the two closed intervals do not overlap."""
    return a[1] < b[0] or b[1] < a[0]


def ratio_interval(
    numerator: tuple[float, float], denominator: tuple[float, float]
) -> tuple[float, float]:
    """A conservative interval for numerator / denominator from the two intervals."""
    low = numerator[0] / denominator[1] if denominator[1] > 0 else math.inf
    high = numerator[1] / denominator[0] if denominator[0] > 0 else math.inf
    return (low, high)


def binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def sign_test_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float, float] | None:
    """(low, high, coverage) for the median of ``values`` by the sign test: the r-th
    smallest and r-th largest values, with r the largest rank whose two-sided error is
    at most 1 - confidence. None when there are too few values for that confidence
    (fewer than 6 at 95 %)."""
    n = len(values)
    ordered = sorted(values)
    best = None
    for rank in range(1, n // 2 + 1):
        error = 2 * binomial_cdf(rank - 1, n)
        if error > 1.0 - confidence:
            break
        best = (ordered[rank - 1], ordered[n - rank], 1.0 - error)
    return best


def paired_log_ratios(reference: Sequence[float], submission: Sequence[float]) -> list[float]:
    """ln(reference / submission) per pair: above 0 where the submission was faster."""
    return [math.log(r / s) for r, s in zip(reference, submission, strict=True) if r > 0 and s > 0]
