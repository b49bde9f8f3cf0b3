import pytest

from rubrics.models import Criterion
from rubrics.services import rubric_total, rule_holds

ACCEPTED_FAST = {
    "verdict": "accepted",
    "speedup": 2.5,
    "timing_mode": "wall",
    "timing": {"significant": True},
    "integrity": {"violations": []},
}


@pytest.mark.parametrize(
    ("rule", "report", "on_target", "expected"),
    [
        ({"type": "verdict", "equals": "accepted"}, ACCEPTED_FAST, True, True),
        ({"type": "verdict", "equals": "accepted"}, {"verdict": "wrong_answer"}, True, False),
        ({"type": "speedup", "at_least": 2.0}, ACCEPTED_FAST, True, True),
        ({"type": "speedup", "at_least": 3.0}, ACCEPTED_FAST, True, False),
        # Off target hardware a speedup never counts.
        ({"type": "speedup", "at_least": 2.0}, ACCEPTED_FAST, False, False),
        # Interpreter timings are never scored.
        (
            {"type": "speedup", "at_least": 2.0},
            {**ACCEPTED_FAST, "timing_mode": "interpreter"},
            True,
            False,
        ),
        # Overlapping confidence intervals: no evidence of a speedup.
        (
            {"type": "speedup", "at_least": 2.0},
            {**ACCEPTED_FAST, "timing": {"significant": False}},
            True,
            False,
        ),
        # A fast wrong answer earns nothing.
        (
            {"type": "speedup", "at_least": 2.0},
            {**ACCEPTED_FAST, "verdict": "wrong_answer"},
            True,
            False,
        ),
        ({"type": "integrity", "clean": True}, ACCEPTED_FAST, True, True),
        (
            {"type": "integrity", "clean": False},
            {"integrity": {"violations": ["patched clock"]}},
            True,
            True,
        ),
        ({"type": "no-such-rule"}, ACCEPTED_FAST, True, False),
    ],
)
def test_rules(rule, report, on_target, expected):
    met, detail = rule_holds(rule, report=report, on_target=on_target)
    assert met is expected
    assert detail


def criteria(*points):
    return [Criterion(key=f"c{i}", points=p) for i, p in enumerate(points)]


def test_total_is_achieved_over_positive_points():
    assert rubric_total(criteria(6, 2, 2), {"c0": 6, "c1": 1}) == pytest.approx(7 / 10)


def test_penalties_subtract_and_the_total_is_clipped_at_zero():
    cs = criteria(4, -3)
    assert rubric_total(cs, {"c0": 4, "c1": -3}) == pytest.approx(1 / 4)
    assert rubric_total(cs, {"c1": -3}) == 0.0


def test_total_never_exceeds_one():
    assert rubric_total(criteria(2), {"c0": 5}) == 1.0
