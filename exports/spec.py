"""The content of an export definition, validated and in canonical form.

``Spec.parse(data)`` takes plain data (from the API, a form or a stored
version), checks every field and raises ``SpecError`` with every problem,
each under its field's name. ``Spec.to_dict()`` is canonical: sorted lists,
empty filters left out. ``content_hash`` is SHA-256 over its JSON, so the same
content always gets the same hash (and editing back to it reuses a version).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from graders import registry
from graders.verdicts import SUBMISSION_VERDICTS
from reviews.models import OutcomeDecision
from tasks.models import Difficulty, Hardware

from .models import ExportFormat

SPLITS = ("train", "validation", "test")
VERDICTS = SUBMISSION_VERDICTS
UNREVIEWED = "unreviewed"  # a review-decision filter value: no final review outcome
REVIEW_DECISIONS = (*OutcomeDecision.values, UNREVIEWED)
MAX_LIST = 200
MAX_SEED = 2**63 - 1

DEFAULT_SPLIT = {"train": 0.8, "validation": 0.1, "test": 0.1}
DEFAULT_OPTIONS: dict[str, Any] = {
    "margin": 0.2,  # preference: least score difference of a score pair
    "pairs_per_submission": 2,  # preference: score pairs in which one submission is chosen
    "include_explanations": True,  # sft: append a reviewer-approved explanation
}


class SpecError(ValueError):
    """Invalid definition content; ``errors`` maps a field to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class Filters:
    """Which data an export reads. Lists are alternatives (any of them) except
    ``tags``, which a task must carry all of, as in the task list's filter."""

    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    difficulties: tuple[str, ...] = ()
    hardware: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()  # task slugs
    task_versions: tuple[int, ...] = ()  # TaskVersion ids
    verdicts: tuple[str, ...] = ()
    review_decisions: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    score_min: float | None = None
    score_max: float | None = None
    created_after: datetime | None = None  # submissions created at or after
    created_before: datetime | None = None  # and before

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in LIST_FILTERS:
            values = getattr(self, name)
            if values:
                out[name] = list(values)
        for name in ("score_min", "score_max"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("created_after", "created_before"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return out


LIST_FILTERS: dict[str, tuple[str, ...] | Callable[[], tuple[str, ...]] | None] = {
    "kinds": registry.kinds,  # read at each check: kinds may be registered later
    "tags": None,
    "difficulties": tuple(Difficulty.values),
    "hardware": tuple(Hardware.values),
    "tasks": None,
    "task_versions": None,
    "verdicts": VERDICTS,
    "review_decisions": REVIEW_DECISIONS,
    "models": None,
}


@dataclass(frozen=True)
class Spec:
    title: str
    format: str
    filters: Filters = field(default_factory=Filters)
    split: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_SPLIT))
    seed: int = 0
    include_submitter: bool = False
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_OPTIONS))

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> Spec:
        errors: dict[str, list[str]] = {}

        def check(name: str, parse: Callable[[Any], Any], default: Any) -> Any:
            try:
                return parse(data.get(name, default))
            except SpecError as exc:
                errors.update({f"{name}.{k}" if k else name: v for k, v in exc.errors.items()})
            except (TypeError, ValueError) as exc:
                errors.setdefault(name, []).append(str(exc))
            return default

        spec = cls(
            title=check("title", _title, ""),
            format=check("format", _choice(ExportFormat.values), ExportFormat.SFT),
            filters=check("filters", _filters, {}),
            split=check("split", _split, DEFAULT_SPLIT),
            seed=check("seed", _seed, 0),
            include_submitter=check("include_submitter", _bool, False),
            description=check("description", _text(5000), ""),
            options=check("options", _options, {}),
        )
        if errors:
            raise SpecError(errors)
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "description": self.description,
            "format": self.format,
            "filters": self.filters.to_dict(),
            "split": {name: self.split[name] for name in SPLITS},
            "seed": self.seed,
            "include_submitter": self.include_submitter,
            "options": dict(sorted(self.options.items())),
        }

    @property
    def content_hash(self) -> str:
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


# Field parsers: each returns the canonical value or raises ValueError/TypeError/SpecError.


def _title(value: Any) -> str:
    text = _text(200)(value).strip()
    if not text:
        raise ValueError("A title is required.")
    return text


def _text(limit: int) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError("Must be text.")
        if len(value) > limit or "\x00" in value:
            raise ValueError(f"At most {limit} characters, no NUL.")
        return value

    return parse


def _choice(choices: tuple[str, ...] | list[str]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"Must be one of: {', '.join(choices)}.")
        return str(value)

    return parse


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("Must be true or false.")
    return value


def _number(value: Any, *, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError("Must be a number.")
    if not low <= value <= high:
        raise ValueError(f"Must be between {low:g} and {high:g}.")
    return float(value)


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("Must be a whole number.")
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"Must be between 0 and {MAX_SEED}.")
    return value


def _split(value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise TypeError("Must be an object with train, validation and test ratios.")
    unknown = sorted(set(value) - set(SPLITS))
    if unknown:
        raise ValueError(f"Unknown split(s): {', '.join(map(str, unknown))}.")
    ratios = {name: _number(value.get(name, 0.0), low=0.0, high=1.0) for name in SPLITS}
    if not math.isclose(sum(ratios.values()), 1.0, abs_tol=1e-6):
        raise ValueError("The ratios must add up to 1.")
    return ratios


def _datetime(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise TypeError("Must be an ISO 8601 date-time.")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _list(name: str, value: Any) -> tuple[Any, ...]:
    if value in (None, ""):
        return ()
    if not isinstance(value, list | tuple):
        raise TypeError("Must be a list.")
    if len(value) > MAX_LIST:
        raise ValueError(f"At most {MAX_LIST} values.")
    choices = LIST_FILTERS[name]
    if callable(choices):
        choices = choices()
    if name == "task_versions":
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
            raise TypeError("Must be task version ids (positive whole numbers).")
        return tuple(sorted(set(value)))
    if not all(isinstance(v, str) and v and len(v) <= 200 and "\x00" not in v for v in value):
        raise TypeError("Must be non-empty strings of at most 200 characters.")
    if choices is not None and (bad := sorted(set(value) - set(choices))):
        raise ValueError(f"Unknown value(s): {', '.join(bad)}; known: {', '.join(choices)}.")
    return tuple(sorted(set(value)))


def _filters(value: Any) -> Filters:
    if value is None:
        return Filters()
    if not isinstance(value, Mapping):
        raise TypeError("Must be an object.")
    known = set(LIST_FILTERS) | {"score_min", "score_max", "created_after", "created_before"}
    errors: dict[str, list[str]] = {}
    if unknown := sorted(set(value) - known):
        errors[""] = [f"Unknown filter(s): {', '.join(map(str, unknown))}."]
    parsed: dict[str, Any] = {}
    for name in known:
        try:
            if name in LIST_FILTERS:
                parsed[name] = _list(name, value.get(name))
            elif name.startswith("score_"):
                raw = value.get(name)
                parsed[name] = None if raw is None else _number(raw, low=0.0, high=1.0)
            else:
                parsed[name] = _datetime(value.get(name))
        except (TypeError, ValueError) as exc:
            errors[name] = [str(exc)]
    if errors:
        raise SpecError(errors)
    filters = Filters(**parsed)
    if None not in (filters.score_min, filters.score_max):
        assert filters.score_min is not None and filters.score_max is not None
        if filters.score_min > filters.score_max:
            raise SpecError({"score_max": ["Must not be below score_min."]})
    after, before = filters.created_after, filters.created_before
    if after and before and after >= before:
        raise SpecError({"created_before": ["Must be after created_after."]})
    return filters


def _options(value: Any) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise TypeError("Must be an object.")
    if unknown := sorted(set(value) - set(DEFAULT_OPTIONS)):
        raise SpecError({"": [f"Unknown option(s): {', '.join(map(str, unknown))}."]})
    merged = {**DEFAULT_OPTIONS, **value}
    errors: dict[str, list[str]] = {}
    options: dict[str, Any] = {}
    parsers: dict[str, Callable[[Any], Any]] = {
        "margin": lambda v: _number(v, low=0.0, high=1.0),
        "pairs_per_submission": _pairs,
        "include_explanations": _bool,
    }
    for name, parse in parsers.items():
        try:
            options[name] = parse(merged[name])
        except (TypeError, ValueError) as exc:
            errors[name] = [str(exc)]
    if errors:
        raise SpecError(errors)
    return options


def _pairs(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("Must be a whole number.")
    if not 0 <= value <= 20:
        raise ValueError("Must be between 0 and 20.")
    return value
