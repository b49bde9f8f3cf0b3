"""Scoring an answer to a profiling task, field by field, against the task's key.

Trusted code on plain data: the answer is JSON, never run. It is parsed with a
size cap, checked against the task's JSON Schema (an invalid answer scores zero
and the report shows the schema's error), then each field of
``[grading.fields]`` is matched by its type (see ``spec.py``). Two scores come
out: ``strict`` (1 when every scored field hits, else 0) and ``partial`` (the
points of the fields hit, each weighted by its own score, over all points).

What a solver may see of a field's result (``message``) never quotes the key:
it says whether the answer hit and why not in terms of the answer itself.
The key's value stays in ``expected``, which only operators and the task's
experts see.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from .evidence import EvidenceIndex
from .spec import MAX_ANSWER_BYTES, FieldRule, ProfilingSpec, json_path

ANSWER_CHARS = 500  # of a solver's value, quoted in the report
ANSWER_DEPTH = 3  # of a solver's nested value, kept in the report
# The longest array an answer may hold: JSON Schema's uniqueItems compares every pair
# of items it cannot sort, so a long array of mixed items would take minutes.
MAX_ARRAY_ITEMS = 2000


@dataclass(frozen=True)
class FieldResult:
    name: str
    type: str
    points: float
    hit: bool
    score: float  # 0..1: the share of the field's points earned
    message: str  # public: about the answer, never the key
    answer: Any = None  # the solver's value, shortened
    expected: Any = None  # the key's value: private

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AnswerScore:
    valid: bool
    error: str  # why the answer is invalid (not JSON, the schema's error); "" if valid
    fields: tuple[FieldResult, ...] = ()
    texts: Mapping[str, str] = field(default_factory=dict)  # text fields, for reviewers

    @property
    def points_total(self) -> float:
        return sum(f.points for f in self.fields)

    @property
    def points(self) -> float:
        return sum(f.points * f.score for f in self.fields)

    @property
    def strict(self) -> float:
        return 1.0 if self.valid and self.fields and all(f.hit for f in self.fields) else 0.0

    @property
    def partial(self) -> float:
        if not self.valid or self.points_total <= 0:
            return 0.0
        return round(self.points / self.points_total, 4)

    @property
    def hits(self) -> int:
        return sum(f.hit for f in self.fields)


def parse_answer(data: bytes) -> tuple[Any, str]:
    """The answer's JSON value, or why it is not one."""
    if len(data) > MAX_ANSWER_BYTES:
        return None, f"the answer is {len(data)} bytes; at most {MAX_ANSWER_BYTES}"
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        return None, f"not JSON: {error}"
    if longest_array(answer) > MAX_ARRAY_ITEMS:
        return None, f"an array of the answer holds over {MAX_ARRAY_ITEMS} items"
    return answer, ""


def schema_error(schema: Mapping[str, Any], answer: Any) -> str:
    """The first place an answer breaks the task's schema, as ``$.path: message``."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    try:
        error = best_match(Draft202012Validator(schema).iter_errors(answer))
    except RecursionError:
        return "$: the answer is nested too deeply"
    if error is None:
        return ""
    message = _short(error.message)
    quoted = repr(error.instance)
    if len(quoted) > 60 and error.message.startswith(quoted[:40]):
        # The message quotes the whole value first: name the rule it fails instead.
        message = (
            f"{_short(repr(error.instance), 40)} fails {error.validator}"
            f" {_short(repr(error.validator_value), 60)}"
        )
    return f"{json_path(error.absolute_path)}: {message}"


def score_answer(spec: ProfilingSpec, data: bytes, traces: Sequence[Any]) -> AnswerScore:
    """Score an answer (the bytes of the submission's answer file)."""
    answer, problem = parse_answer(data)
    if not problem:
        problem = schema_error(spec.schema, answer)
    if problem:
        return AnswerScore(valid=False, error=problem)
    index = EvidenceIndex(traces)
    results = tuple(
        _score_field(rule, answer.get(rule.name), spec.key.get(rule.name), index)
        for rule in spec.scored_fields
    )
    texts = {
        rule.name: str(answer.get(rule.name, ""))
        for rule in spec.fields
        if not rule.scored and isinstance(answer.get(rule.name), str)
    }
    return AnswerScore(valid=True, error="", fields=results, texts=texts)


def _score_field(rule: FieldRule, value: Any, expected: Any, index: EvidenceIndex) -> FieldResult:
    if rule.type == "kernel":
        hit, message = _kernel(value, expected, rule.aliases)
        score = 1.0 if hit else 0.0
    elif rule.type == "number":
        hit, message = _number(value, expected, rule.abs_tol, rule.rel_tol)
        score = 1.0 if hit else 0.0
    elif rule.type == "category":
        hit = isinstance(value, str) and value == expected
        message = "matches" if hit else f"{_describe(value)} is not the bottleneck"
        score = 1.0 if hit else 0.0
    elif rule.type == "set":
        score, hit, message = _set(value, expected, rule.required, rule.min_f1)
    else:
        score, hit, message = _evidence(value, expected, rule.min_items, index)
    return FieldResult(
        name=rule.name,
        type=rule.type,
        points=rule.points,
        hit=hit,
        score=round(score, 4),
        message=message,
        answer=_shorten(value),
        expected=expected,
    )


def _kernel(value: Any, expected: Any, aliases: Sequence[str]) -> tuple[bool, str]:
    from .analysis import normalize_kernel_name

    if not isinstance(value, str) or not value.strip():
        return False, "no kernel named"
    answered = normalize_kernel_name(value)
    wanted = {normalize_kernel_name(name) for name in (str(expected), *aliases)}
    if answered in wanted:
        return True, "matches"
    # A kernel named without its namespace counts: "softmax_warp_forward" names
    # "at::native::(anonymous namespace)::softmax_warp_forward".
    if "::" not in answered and answered in {name.rpartition("::")[2] for name in wanted}:
        return True, "matches (by its unqualified name)"
    return False, f"{_short(value)} is not the kernel asked for"


def _number(value: Any, expected: Any, abs_tol: float, rel_tol: float) -> tuple[bool, str]:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False, "not a number"
    allowed = max(abs_tol, rel_tol * abs(float(expected)))
    # "Within" includes the bound: 16.32 is within 2 % of 16.0, whatever the rounding.
    slack = 1e-9 * max(1.0, abs(float(expected)))
    if abs(float(value) - float(expected)) <= allowed + slack:
        return True, "within the tolerance"
    # Both tolerances as declared: which one applies would tell the key's magnitude.
    tolerance = " or ".join(
        text
        for text, on in ((f"±{abs_tol:g}", abs_tol > 0), (f"±{rel_tol:.1%}", rel_tol > 0))
        if on
    )
    return False, f"{value:g} is outside the tolerance ({tolerance or 'exact'})"


def _set(
    value: Any, expected: Any, required: Sequence[str], min_f1: float
) -> tuple[float, bool, str]:
    if not isinstance(value, list):
        return 0.0, False, "not a list"
    answered = {item for item in value if isinstance(item, str)}
    wanted = set(expected)
    common = len(answered & wanted)
    precision = common / len(answered) if answered else 0.0
    recall = common / len(wanted) if wanted else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    missing = [item for item in required if item not in answered]
    if missing:
        return 0.0, False, "a required item is missing"
    hit = f1 >= min_f1 - 1e-9
    return f1, hit, f"F1 {f1:.2f}" + ("" if hit else f", below the {min_f1:.2f} wanted")


def _evidence(
    value: Any, expected: Any, min_items: int, index: EvidenceIndex
) -> tuple[float, bool, str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return 0.0, False, "not a list of event ids"
    if not value:
        return 0.0, False, "no event cited"
    named = [index.events(item) for item in value]
    unknown = [item for item, events in zip(value, named, strict=True) if not events]
    if unknown:
        return 0.0, False, f"{_short(unknown[0])} is not an event of the trace"
    # A citation is the events it names: one event cited twice, under two ids (by
    # position and by correlation id), is one citation. Each id of the key is one
    # piece of evidence, covered when a citation names one of its events.
    cited = list(dict.fromkeys(named))
    key_items = [events for events in map(index.events, expected) if events]
    wanted = frozenset().union(*key_items)
    cited_events = frozenset().union(*cited)
    relevant = sum(bool(events & wanted) for events in cited)
    covered = sum(bool(events & cited_events) for events in key_items)
    precision = relevant / len(cited)
    coverage = min(1.0, covered / min_items)
    score = precision * coverage
    if relevant < len(cited):
        message = "some cited events are not the bottleneck's"
    elif covered < min_items:
        message = f"{covered} distinct event(s) cited; at least {min_items} wanted"
    else:
        message = f"all {len(cited)} cited events are the bottleneck's"
    return score, score >= 1.0, message


def _short(text: str, limit: int = 120) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"


def _describe(value: Any) -> str:
    """A solver's value in a message: a string as written, anything else by its type."""
    return repr(_short(value)) if isinstance(value, str) else f"a JSON {type(value).__name__}"


def _shorten(value: Any, depth: int = ANSWER_DEPTH) -> Any:
    """The solver's value as the report keeps it: long strings and lists cut, nesting
    cut below ``depth``."""
    if isinstance(value, str):
        return _short(value, ANSWER_CHARS)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth <= 0:
        return "\N{HORIZONTAL ELLIPSIS}"
    if isinstance(value, list):
        return [_shorten(v, depth - 1) for v in value[:50]]
    if isinstance(value, dict):
        return {str(k)[:100]: _shorten(v, depth - 1) for k, v in list(value.items())[:50]}
    return _short(type(value).__name__, ANSWER_CHARS)


def longest_array(value: Any) -> int:
    """The most items any array in a parsed answer holds (iterative: answers nest)."""
    longest, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            longest = max(longest, len(item))
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return longest
