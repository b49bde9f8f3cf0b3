"""Reports that can always be stored.

A report quotes what a submission did: its output, the name of a type it made
up, a message it raised. PostgreSQL's ``jsonb`` and text columns refuse some of
what Python strings and floats can hold (a NUL character, a lone surrogate,
NaN and infinities), and one refused report would leave its submission running
until the sweeper calls it the platform's failure. ``storable`` makes any report
safe to store, and every grader's report goes through it at the source; the
trusted side applies it again before writing (a report that has travelled
through the broker is data like any other).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
MAX_DEPTH = 64


def clean_string(text: str) -> str:
    """``text`` with its NUL characters and lone surrogates replaced by U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", REPLACEMENT)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def storable(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON-like value that PostgreSQL stores as it is: strings cleaned
    (``clean_string``), non-finite floats as None, keys as strings, tuples as lists,
    anything else (or anything nested deeper than ``MAX_DEPTH``) as its ``repr``."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_string(value)
    if depth >= MAX_DEPTH:
        return clean_string(repr(value)[:200])
    if isinstance(value, Mapping):
        return {clean_string(str(key)): storable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item, depth + 1) for item in value]
    return clean_string(repr(value)[:200])


def report_number(report: Mapping[str, Any], *keys: str) -> float | None:
    """The number at ``keys`` in a report (``report_number(r, "timing", "speedup")``), or
    None where there is none (a missing key, a boolean, a string)."""
    value: Any = report
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
