"""Krippendorff's alpha and Cohen's kappa against published and hand-computed values."""

import pytest

from reviews.agreement import (
    INTERVAL,
    NOMINAL,
    ORDINAL,
    cohen_kappa,
    coincidences,
    krippendorff_alpha,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# 4 observers, 12 units, values 1-5, missing values marked None.
N = None
OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]
TEXTBOOK_UNITS = list(zip(*OBSERVERS, strict=True))


@pytest.mark.parametrize(
    ("level", "published"), [(NOMINAL, 0.743), (ORDINAL, 0.815), (INTERVAL, 0.849)]
)
def test_alpha_matches_krippendorffs_worked_example(level, published):
    assert krippendorff_alpha(TEXTBOOK_UNITS, level) == pytest.approx(published, abs=5e-4)


def test_the_worked_example_leaves_out_the_unit_only_one_observer_coded():
    # Unit 12 has a single value (3): it is not pairable, so it adds nothing.
    matrix = coincidences(TEXTBOOK_UNITS)

    totals = {c: sum(w for (first, _), w in matrix.items() if first == c) for c in range(1, 6)}
    assert totals == pytest.approx({1: 9, 2: 13, 3: 10, 4: 5, 5: 3})  # n = 40, as published
    assert matrix[(3, 3)] == pytest.approx(8)  # units 3 and 4: four 3s each, 12 pairs / 3
    assert matrix[(1, 2)] == pytest.approx(4 / 3)  # unit 6 gives 1/3, unit 8 gives 3 * 1/3


def test_nominal_alpha_by_hand():
    # Units (a,a), (a,b), (b,b): o_aa = o_bb = 2, o_ab = o_ba = 1; n_a = n_b = 3, n = 6.
    # D_o ~ 2 mismatching ordered pairs, D_e ~ 2 * 3 * 3 = 18; alpha = 1 - 5 * 2 / 18 = 4/9.
    assert krippendorff_alpha([("a", "a"), ("a", "b"), ("b", "b")], NOMINAL) == pytest.approx(4 / 9)


def test_interval_alpha_by_hand():
    # Units (1,2), (3,3), (5,4): sum o*d = 2*1 + 2*1 = 4; sum n_c n_k (c-k)^2 = 120; n = 6.
    # alpha = 1 - 5 * 4 / 120 = 5/6.
    assert krippendorff_alpha([(1, 2), (3, 3), (5, 4)], INTERVAL) == pytest.approx(5 / 6)


def test_ordinal_alpha_by_hand():
    # Same data, ranks: d(c,k) = (sum of n_g from c to k - (n_c + n_k)/2)^2 with
    # n = {1:1, 2:1, 3:2, 4:1, 5:1}; sum o*d = 4, sum n_c n_k d = 2 * 102 = 204.
    # alpha = 1 - 5 * 4 / 204 = 184/204.
    assert krippendorff_alpha([(1, 2), (3, 3), (5, 4)], ORDINAL) == pytest.approx(184 / 204)


def test_perfect_agreement_is_one_and_systematic_disagreement_is_negative():
    assert krippendorff_alpha([(1, 1), (2, 2), (3, 3)], INTERVAL) == pytest.approx(1.0)
    disagreement = krippendorff_alpha([("a", "b"), ("b", "a")], NOMINAL)
    assert disagreement is not None and disagreement < 0


def test_alpha_is_undefined_without_variation_or_without_pairs():
    assert krippendorff_alpha([(2, 2), (2, 2)], INTERVAL) is None
    assert krippendorff_alpha([(1, None), (None, 3)], INTERVAL) is None
    assert krippendorff_alpha([], NOMINAL) is None


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([(1, 2), (2, 2)], "ratio-ish")


def test_cohen_kappa_textbook_example():
    # 50 items: both yes 20, A yes / B no 5, A no / B yes 10, both no 15.
    # p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4.
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_cohen_kappa_three_categories_by_hand():
    # p_o = 5/6; A's marginals a:3 b:2 c:1, B's a:2 b:3 c:1;
    # p_e = (3*2 + 2*3 + 1*1) / 36 = 13/36; kappa = (30/36 - 13/36) / (23/36) = 17/23.
    pairs = [("a", "a"), ("a", "a"), ("a", "b"), ("b", "b"), ("b", "b"), ("c", "c")]
    assert cohen_kappa(pairs) == pytest.approx(17 / 23)


def test_cohen_kappa_edge_cases():
    assert cohen_kappa([]) is None
    assert cohen_kappa([("x", "x"), ("x", "x")]) is None  # one category only: undefined
    assert cohen_kappa([("a", "a"), ("b", "b")]) == pytest.approx(1.0)
