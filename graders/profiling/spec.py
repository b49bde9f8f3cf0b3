"""What a profiling grading needs to know about its task, parsed from ``task.toml``.

A profiling task of the ``answer`` form hands solvers one or more profiler traces
(role ``artifact``, shown) and a JSON Schema of the answer (role ``artifact``,
shown), and keeps hidden an answer key (``key``) and the script that derives
the key from the traces (``key_script``). The ``[grading.fields]`` table says how
each field of an answer is matched against the key:

========== ==================================================================
type       a field hits when
========== ==================================================================
kernel     the kernel name equals the key's (or an alias) after normalising
           (demangled, return type, template arguments and parameters dropped)
number     it lies within ``abs_tol`` or ``rel_tol`` of the key's value
category   it equals the key's value (one of the schema's enum)
set        the F1 of the answered items against the key's reaches ``min_f1``
           and every ``required`` item is there
evidence   every cited event exists in the traces and is one of the key's,
           and at least ``min_items`` are cited
text       never scored: free text, shown to reviewers
========== ==================================================================

Every error is a ``GradingTableError`` naming the file and the field. The traces
are loaded here (a trace that does not load is the bundle's error, named by its
path); nothing here runs a task's code.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from graders.contract import GradingTableError
from graders.filetext import file_bytes

Form = Literal["answer"]
FORMS: tuple[str, ...] = ("answer", "reprofile")  # reprofile: see fix_task.py
FieldType = Literal["kernel", "number", "category", "set", "evidence", "text"]
FIELD_TYPES: tuple[str, ...] = ("kernel", "number", "category", "set", "evidence", "text")

GRADING_KEYS = (
    "form",
    "traces",
    "schema",
    "key",
    "key_script",
    "answer_file",
    "fields",
    "negative_scores",
)
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    "kernel": ("type", "points", "aliases"),
    "number": ("type", "points", "abs_tol", "rel_tol"),
    "category": ("type", "points"),
    "set": ("type", "points", "required", "min_f1"),
    "evidence": ("type", "points", "min_items"),
    "text": ("type",),
}
DEFAULT_ANSWER_FILE = "answer.json"
MAX_FIELDS = 40
MAX_POINTS = 100
MAX_ANSWER_BYTES = 256 * 1024
# The bottleneck vocabulary a category field usually draws from (a task's schema
# may narrow it or name its own categories).
BOTTLENECKS = (
    "compute_bound",
    "memory_bound",
    "host_launch_bound",
    "host_sync",
    "data_loader",
    "exposed_communication",
    "pageable_copies",
    "load_imbalance",
)
# A declared score is met when the graded partial score is this close to it.
SCORE_TOLERANCE = 0.005


@dataclass(frozen=True)
class FieldRule:
    """How one answer field is matched against the key."""

    name: str
    type: FieldType
    points: float = 1.0
    aliases: tuple[str, ...] = ()  # kernel
    abs_tol: float = 0.0  # number
    rel_tol: float = 0.0  # number
    required: tuple[str, ...] = ()  # set
    min_f1: float = 1.0  # set
    min_items: int = 1  # evidence

    @property
    def scored(self) -> bool:
        return self.type != "text"


@dataclass(frozen=True)
class ProfilingSpec:
    form: Form
    traces: tuple[str, ...]  # bundle paths, in rank order
    schema_path: str
    schema: Mapping[str, Any] = field(repr=False)
    key_path: str
    key: Mapping[str, Any] = field(repr=False)
    key_script: str
    answer_file: str
    fields: tuple[FieldRule, ...]
    negative_scores: Mapping[str, float]  # negative's bundle path -> its partial score
    # The traces, loaded (``trace.Trace``), in the order of ``traces``.
    loaded: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    @property
    def scored_fields(self) -> tuple[FieldRule, ...]:
        return tuple(f for f in self.fields if f.scored)

    def evidence_prefix(self, rank_index: int) -> str:
        """How an evidence id names an event of the ``rank_index``-th trace: bare when
        the task has one trace, ``rank<r>/`` before it when it has several."""
        return f"rank{rank_index}/" if len(self.traces) > 1 else ""

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], files: Mapping[str, str]) -> ProfilingSpec:
        grading = manifest.get("grading")
        if not isinstance(grading, Mapping):
            raise GradingTableError("grading", "a profiling task needs a [grading] table")
        unknown = sorted(set(grading) - set(GRADING_KEYS))
        if unknown:
            raise GradingTableError(
                f"grading.{unknown[0]}", f"unknown key; known: {', '.join(GRADING_KEYS)}"
            )
        form = grading.get("form", "answer")
        if form not in FORMS:
            raise GradingTableError("grading.form", f"must be one of: {', '.join(FORMS)}")
        if form != "answer":
            raise GradingTableError("grading.form", f"a {form} task has other settings")
        entries = _entries(manifest)
        traces, loaded = _traces(grading, entries, files)
        schema_path = _path(grading, "schema", entries, files, shown=True)
        schema = _json_file(schema_path, files)
        _check_schema(schema_path, schema)
        key_path = _path(grading, "key", entries, files, shown=False)
        key = _json_file(key_path, files)
        key_script = _path(grading, "key_script", entries, files, shown=None)
        if not key_script.endswith(".py"):
            raise GradingTableError("grading.key_script", f"{key_script} must be a Python file")
        answer_file = grading.get("answer_file", DEFAULT_ANSWER_FILE)
        if (
            not isinstance(answer_file, str)
            or not answer_file.endswith(".json")
            or "/" in answer_file
        ):
            raise GradingTableError("grading.answer_file", "must be a file name ending in .json")
        rules = _fields(grading)
        _check_against_schema(rules, schema, schema_path)
        _check_key(rules, key, key_path, schema)
        _check_key_events(rules, key, key_path, loaded)
        negatives = _negative_scores(grading, entries)
        return cls(
            form="answer",
            traces=traces,
            schema_path=schema_path,
            schema=schema,
            key_path=key_path,
            key=key,
            key_script=key_script,
            answer_file=answer_file,
            fields=rules,
            negative_scores=negatives,
            loaded=loaded,
        )


def _entries(manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(e.get("path")): e
        for e in manifest.get("files") or []
        if isinstance(e, Mapping) and isinstance(e.get("path"), str)
    }


def _path(
    grading: Mapping[str, Any],
    name: str,
    entries: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str],
    *,
    shown: bool | None,
) -> str:
    """A bundle path the table names, listed, present, and shown to solvers or hidden
    from them as ``shown`` says (None: either)."""
    where = f"grading.{name}"
    path = grading.get(name)
    if not isinstance(path, str) or not path:
        raise GradingTableError(where, "is required: a path in the bundle")
    if posixpath.normpath(path) != path or path.startswith(("/", "../")):
        raise GradingTableError(where, f"{path!r} must be a plain relative path")
    entry = entries.get(path)
    if entry is None or path not in files:
        raise GradingTableError(where, f"{path} is not a file of the bundle")
    visibility = entry.get("visibility")
    if shown is True and visibility != "prompt":
        raise GradingTableError(where, f"{path} must be shown to solvers (visibility prompt)")
    if shown is False and visibility != "hidden":
        raise GradingTableError(where, f"{path} must be hidden (visibility hidden)")
    return path


def _traces(
    grading: Mapping[str, Any],
    entries: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str],
) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    from .trace import TraceError, load_trace

    paths = grading.get("traces")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise GradingTableError("grading.traces", "must be a list of trace files, one per rank")
    if len(set(paths)) != len(paths):
        raise GradingTableError("grading.traces", "lists a trace twice")
    checked, loaded = [], []
    for index, path in enumerate(paths):
        checked.append(_path({"traces": path}, "traces", entries, files, shown=True))
        try:
            loaded.append(load_trace(file_bytes(path, files[path]), name=path))
        except (TraceError, ValueError) as error:
            raise GradingTableError("", str(error), file=path) from None
        if entries[path].get("role") != "artifact":
            raise GradingTableError(f"grading.traces[{index}]", f"{path} must have role artifact")
    return tuple(checked), tuple(loaded)


def _json_file(path: str, files: Mapping[str, str]) -> Any:
    try:
        return json.loads(files[path])
    except json.JSONDecodeError as error:
        raise GradingTableError(
            "", f"line {error.lineno} column {error.colno}: {error.msg}", file=path
        ) from None


def _check_schema(path: str, schema: Any) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise GradingTableError(
            "type", 'the answer schema must be {"type": "object", ...}', file=path
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = ".".join(str(p) for p in error.absolute_path) or "(top)"
        raise GradingTableError(where, error.message, file=path) from None


def _number(
    rule: Mapping[str, Any],
    key: str,
    where: str,
    default: float,
    *,
    low: float = 0.0,
    high: float = math.inf,
) -> float:
    value = rule.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GradingTableError(f"{where}.{key}", "must be a number")
    if not low <= value <= high:
        raise GradingTableError(f"{where}.{key}", f"must lie in [{low}, {high}]")
    return float(value)


def _strings(rule: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = rule.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise GradingTableError(f"{where}.{key}", "must be a list of strings")
    return tuple(value)


def _fields(grading: Mapping[str, Any]) -> tuple[FieldRule, ...]:
    table = grading.get("fields")
    if not isinstance(table, Mapping) or not table:
        raise GradingTableError("grading.fields", "must be a table of answer fields")
    if len(table) > MAX_FIELDS:
        raise GradingTableError("grading.fields", f"at most {MAX_FIELDS} fields")
    rules = []
    for name, rule in table.items():
        where = f"grading.fields.{name}"
        if not isinstance(rule, Mapping):
            raise GradingTableError(where, "must be a table with a type")
        kind = rule.get("type")
        if kind not in FIELD_TYPES:
            raise GradingTableError(f"{where}.type", f"must be one of: {', '.join(FIELD_TYPES)}")
        unknown = sorted(set(rule) - set(FIELD_KEYS[kind]))
        if unknown:
            raise GradingTableError(
                f"{where}.{unknown[0]}",
                f"not a setting of a {kind} field; known: {', '.join(FIELD_KEYS[kind])}",
            )
        points = _number(rule, "points", where, 1.0, low=0.0, high=MAX_POINTS)
        abs_tol = _number(rule, "abs_tol", where, 0.0)
        rel_tol = _number(rule, "rel_tol", where, 0.0, high=1.0)
        min_f1 = _number(rule, "min_f1", where, 1.0, high=1.0)
        min_items = rule.get("min_items", 1)
        if isinstance(min_items, bool) or not isinstance(min_items, int) or min_items < 1:
            raise GradingTableError(f"{where}.min_items", "must be a whole number, at least 1")
        if kind == "set" and min_f1 <= 0:
            raise GradingTableError(f"{where}.min_f1", "must be above 0")
        rules.append(
            FieldRule(
                name=str(name),
                type=kind,
                points=points,
                aliases=_strings(rule, "aliases", where),
                abs_tol=abs_tol,
                rel_tol=rel_tol,
                required=_strings(rule, "required", where),
                min_f1=min_f1,
                min_items=min_items,
            )
        )
    if not any(r.scored and r.points > 0 for r in rules):
        raise GradingTableError("grading.fields", "needs at least one scored field with points")
    return tuple(rules)


def _check_against_schema(rules: Sequence[FieldRule], schema: Mapping[str, Any], path: str) -> None:
    """Every field the table grades is a property of the answer the schema requires."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    for rule in rules:
        where = f"grading.fields.{rule.name}"
        if rule.name not in properties:
            raise GradingTableError(where, f"is not a property of the answer schema ({path})")
        if rule.scored and rule.name not in required:
            raise GradingTableError(where, f"a scored field must be required by {path}")


def _check_key(
    rules: Sequence[FieldRule], key: Any, key_path: str, schema: Mapping[str, Any]
) -> None:
    """The key is itself a valid answer, and holds what each field is matched against."""
    from jsonschema import Draft202012Validator

    if not isinstance(key, Mapping):
        raise GradingTableError("", "the answer key must be a JSON object", file=key_path)
    error = next(iter(Draft202012Validator(schema).iter_errors(key)), None)
    if error is not None:
        raise GradingTableError(
            json_path(error.absolute_path),
            f"not a valid answer: {short_message(error.message)}",
            file=key_path,
        )
    for rule in rules:
        if not rule.scored:
            continue
        value = key.get(rule.name)
        if rule.type in ("set", "evidence"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise GradingTableError(rule.name, "must be a list of strings", file=key_path)
            missing = sorted(set(rule.required) - set(value))
            if missing:
                raise GradingTableError(
                    f"grading.fields.{rule.name}.required",
                    f"{missing[0]} is not in the key's {rule.name}",
                )
            if rule.type == "evidence" and len(set(value)) < rule.min_items:
                raise GradingTableError(
                    f"grading.fields.{rule.name}.min_items",
                    f"the key's {rule.name} holds {len(set(value))} ids: no answer can cite "
                    f"{rule.min_items}",
                )
        elif rule.type == "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise GradingTableError(rule.name, "must be a number", file=key_path)
        elif not isinstance(value, str):
            raise GradingTableError(rule.name, "must be a string", file=key_path)


def _check_key_events(
    rules: Sequence[FieldRule], key: Mapping[str, Any], key_path: str, traces: Sequence[Any]
) -> None:
    """Every evidence id of the key names an event of the traces."""
    from .evidence import EvidenceIndex

    index = EvidenceIndex(traces)
    for rule in rules:
        if rule.type != "evidence":
            continue
        for position, item in enumerate(key[rule.name]):
            if not index.events(item):
                raise GradingTableError(
                    f"{rule.name}[{position}]",
                    f"{item} names no event of the traces",
                    file=key_path,
                )


def _negative_scores(
    grading: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]]
) -> dict[str, float]:
    """The partial score each negative answer declares it earns; every negative
    declares one, so that validation checks the scoring, not only the verdict."""
    table = grading.get("negative_scores", {})
    if not isinstance(table, Mapping):
        raise GradingTableError("grading.negative_scores", "must be a table of path = score")
    negatives = sorted(p for p, e in entries.items() if e.get("role") == "negative")
    scores: dict[str, float] = {}
    for path in table:
        if path not in negatives:
            raise GradingTableError(
                f'grading.negative_scores."{path}"', f"{path} is not a negative example"
            )
        scores[str(path)] = _number(table, path, "grading.negative_scores", 0.0, high=1.0)
    for path in negatives:
        if path not in scores:
            raise GradingTableError(
                "grading.negative_scores", f"{path} must declare the partial score it earns"
            )
    return scores


def short_message(text: str, limit: int = 300) -> str:
    """A schema error's message, which quotes the offending value, cut to ``limit``."""
    return text if len(text) <= limit else text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"


def json_path(parts: Sequence[Any] | Any) -> str:
    """``$.evidence[2]`` for a JSON Schema error's path."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
