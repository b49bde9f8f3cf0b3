"""Timing statistics: medians, spread, intervals and the separation test."""

from __future__ import annotations

import math

import pytest

from graders import stats as timing


def test_median_and_spread() -> None:
    assert timing.median([3.0, 1.0, 2.0]) == 2.0
    assert timing.spread([1.0, 1.0, 1.0]) == 0.0
    assert timing.spread([0.9, 1.0, 1.2]) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        timing.median([])


def test_bootstrap_interval_holds_the_median_and_is_repeatable() -> None:
    samples = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00]
    low, high = timing.bootstrap_median_ci(samples)
    assert low <= timing.median(samples) <= high
    assert low > 0.95 and high < 1.05
    assert timing.bootstrap_median_ci(samples) == (low, high)
    assert timing.bootstrap_median_ci([2.0]) == (2.0, 2.0)


def test_t_interval_of_the_mean() -> None:
    low, high = timing.t_mean_ci([1.0, 2.0, 3.0])
    # mean 2, sd 1, n 3: half width = 4.303 / sqrt(3)
    assert (low, high) == pytest.approx((2 - 4.303 / math.sqrt(3), 2 + 4.303 / math.sqrt(3)))


def test_stopping_rule_tightens_with_steady_samples() -> None:
    noisy = [1.0, 1.6, 0.7, 1.3, 0.9]
    steady = [1.0, 1.001, 0.999, 1.0, 1.0005]
    assert timing.relative_half_width(steady) < 0.01 < timing.relative_half_width(noisy)
    assert timing.relative_half_width([1.0]) == math.inf


def test_intervals_separate_only_without_overlap() -> None:
    assert timing.intervals_separate((1.0, 2.0), (2.5, 3.0))
    assert timing.intervals_separate((2.5, 3.0), (1.0, 2.0))
    assert not timing.intervals_separate((1.0, 2.0), (1.9, 3.0))


def test_ratio_interval_is_conservative() -> None:
    assert timing.ratio_interval((2.0, 4.0), (1.0, 2.0)) == (1.0, 4.0)
    assert timing.ratio_interval((1.0, 2.0), (0.0, 1.0))[1] == math.inf


def test_the_sign_test_interval_needs_six_values_at_95_percent() -> None:
    assert timing.sign_test_interval([0.1, 0.2, 0.3, 0.4, 0.5]) is None
    low, high, coverage = timing.sign_test_interval([0.3, 0.1, 0.6, 0.2, 0.5, 0.4])  # type: ignore[misc]
    assert (low, high) == (0.1, 0.6) and coverage == pytest.approx(1 - 2 / 64)
    # Nine values: the second smallest and second largest, at 96 %.
    low, high, coverage = timing.sign_test_interval(list(range(9)))  # type: ignore[misc]
    assert (low, high) == (1, 7) and coverage == pytest.approx(1 - 2 * 10 / 512)


def test_paired_ratios_cancel_drift_that_both_sides_share() -> None:
    # The host slows down threefold halfway; each pair still says the same thing.
    reference = [1.0, 1.0, 1.0, 3.0, 3.0, 3.0]
    submission = [0.5, 0.5, 0.5, 1.5, 1.5, 1.5]
    ratios = timing.paired_log_ratios(reference, submission)
    assert ratios == pytest.approx([math.log(2.0)] * 6)
    low, high, _ = timing.sign_test_interval(ratios)  # type: ignore[misc]
    assert math.exp(low) == pytest.approx(2.0) and math.exp(high) == pytest.approx(2.0)
    # Unpaired medians of the same samples would overlap and say nothing.
    assert not timing.intervals_separate(
        timing.bootstrap_median_ci(reference), timing.bootstrap_median_ci(submission)
    )
