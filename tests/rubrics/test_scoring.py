import pytest

from rubrics.models import Criterion
from rubrics.services import rubric_total, rule_holds
from tests import recorded

# Reports the real grader wrote (tests/recorded.py).
FAST = recorded.ACCEPTED  # accepted, cpu_time, significant speedup above 2x
SAME = recorded.ACCEPTED_SLOWER  # accepted, speedup about 1x, within noise
INTERPRETER = recorded.INTERPRETER  # accepted under Triton's interpreter: never scored
SPEEDUP = {"type": "speedup", "at_least": 2.0}
CLEAN = {"type": "integrity", "clean": True}
PENALTY = {"type": "integrity", "clean": False}


def test_the_recordings_are_what_these_rules_are_tested_on():
    fast = recorded.report(FAST)
    assert fast["verdict"] == "accepted" and fast["timing"]["significant"]
    assert fast["speedup"] >= 2.0
    assert not recorded.report(SAME)["timing"]["significant"]
    assert recorded.report(INTERPRETER)["timing_mode"] == "interpreter"


@pytest.mark.parametrize(
    ("rule", "name", "on_target", "expected"),
    [
        ({"type": "verdict", "equals": "accepted"}, FAST, True, True),
        ({"type": "verdict", "equals": "accepted"}, recorded.WRONG_ANSWER, True, False),
        (SPEEDUP, FAST, True, True),
        ({"type": "speedup", "at_least": 30.0}, FAST, True, False),
        # Off target hardware a speedup never counts.
        (SPEEDUP, FAST, False, False),
        # Interpreter timings are never scored.
        ({"type": "speedup", "at_least": 0.0}, INTERPRETER, True, False),
        # Within timing noise: no evidence of a speedup, whatever the figure.
        ({"type": "speedup", "at_least": 0.5}, SAME, True, False),
        # A failed grading earns nothing.
        ({"type": "speedup", "at_least": 0.0}, recorded.WRONG_ANSWER, True, False),
        (CLEAN, FAST, True, True),
        # "No findings" means nothing for code that failed or never ran.
        (CLEAN, recorded.WRONG_ANSWER, True, False),
        (CLEAN, recorded.EMPTY, True, False),
        (CLEAN, recorded.SYNTAX_ERROR, True, False),
        (CLEAN, recorded.INTEGRITY_VIOLATION, True, False),
        # A penalty applies to a finding whatever the verdict, and only to one.
        (PENALTY, recorded.INTEGRITY_VIOLATION, True, True),
        (PENALTY, FAST, True, False),
        (PENALTY, recorded.EMPTY, True, False),
        ({"type": "no-such-rule"}, FAST, True, False),
    ],
)
def test_rules(rule, name, on_target, expected):
    met, detail = rule_holds(rule, report=recorded.report(name), on_target=on_target, kind="kernel")
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
