"""A serving task's ``[grading]`` table: engine, model, workload, SLOs, objective, flags.

::

    [grading]
    engine = "vllm"
    engine_version = "0.32.0"       # must be the serving environment's
    submission = "engine.toml"      # the solver's file: engine flags, a TOML table
    reference = "reference/engine.toml"   # the author's config (hidden)
    allowed = ["max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill"]
    quality = []                    # quality-changing flags the author allows
    fixed = { dtype = "bfloat16", max_model_len = 2048, enforce_eager = true }
    kv_cache_gib = 1                # the KV cache each engine gets
    runs = 3                        # measured runs per side, interleaved (at least 3)
    startup_timeout_s = 300

    [grading.ranges]                # inclusive bounds per flag
    max_num_seqs = [1, 64]

    [grading.model]                 # CPU tasks: a tiny model built from a recipe
    tiny = { seed = 0, hidden_size = 256, num_hidden_layers = 4 }
    # path = "/models/llama-3.1-8b" # GPU tasks: a model on the GPU pool

    [grading.workload]
    dataset = "random"              # random | lengths | prefix
    input_len = 512
    output_len = 32
    range_ratio = 0.25              # random: lengths within +-25 %
    # lengths = "workload/lengths.jsonl"   # lengths: one {"input": n, "output": m} per line
    # prefix_len = 256, prefixes = 4       # prefix: shared prefixes, then input_len more
    arrival = "poisson"             # poisson | gamma (burstiness = its shape)
    burstiness = 1.0
    rate = 4.0                      # requests per second
    requests = 60
    warmup = 4                      # requests before each measured run
    seed = 0
    ignore_eos = true

    [grading.slo]                   # per request, as vLLM's goodput counts them
    ttft_ms = 500
    tpot_ms = 50
    e2el_ms = 10000                 # optional
    attainment = 0.9                # the share of requests that must meet every SLO

    [grading.objective]
    kind = "goodput"                # at workload.rate; or "max_rate": a search over rates
    # rates = [1, 2, 4, 8]          # max_rate: the rates tried, in order

Every error is a ``GradingTableError`` naming the file and the field. Pure
Python: the web app parses bundles without the serving environment.
"""

from __future__ import annotations

import json
import math
import posixpath
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graders.contract import GradingTableError

from .flags import NEVER, QUALITY, SETTABLE, FlagPolicy, normalise, number_text
from .tinymodel import Recipe

ENGINES = {"vllm": "0.32.0"}  # the engines this platform runs, at their pinned versions
DATASETS = ("random", "lengths", "prefix")
ARRIVALS = ("poisson", "gamma")
OBJECTIVES = ("goodput", "max_rate")
SLO_METRICS = ("ttft_ms", "tpot_ms", "e2el_ms")
GRADING_KEYS = (
    "engine",
    "engine_version",
    "submission",
    "reference",
    "allowed",
    "quality",
    "fixed",
    "kv_cache_gib",
    "runs",
    "startup_timeout_s",
    "ranges",
    "model",
    "workload",
    "slo",
    "objective",
)
WORKLOAD_KEYS = (
    "dataset",
    "input_len",
    "output_len",
    "range_ratio",
    "lengths",
    "prefix_len",
    "prefixes",
    "arrival",
    "burstiness",
    "rate",
    "requests",
    "warmup",
    "seed",
    "ignore_eos",
)
GIB = 1 << 30
MAX_REQUESTS = 5000
MAX_INPUT_LEN = 1 << 17
MAX_OUTPUT_LEN = 1 << 15
MAX_RATES = 12
MAX_TINY_PARAMETERS = 50_000_000  # built in seconds, served on a CPU


@dataclass(frozen=True)
class Workload:
    dataset: str
    input_len: int
    output_len: int
    range_ratio: float
    lengths: str | None  # bundle path of the length-distribution file
    prefix_len: int
    prefixes: int
    arrival: str
    burstiness: float
    rate: float
    requests: int
    warmup: int
    seed: int
    ignore_eos: bool
    # dataset = "lengths": the file's (input, output) token counts, one per line.
    length_rows: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Slo:
    ttft_ms: float | None
    tpot_ms: float | None
    e2el_ms: float | None
    attainment: float

    def goodput_args(self) -> list[str]:
        """vLLM's ``--goodput`` pairs (``ttft:500``), in its metric names."""
        names = {"ttft_ms": "ttft", "tpot_ms": "tpot", "e2el_ms": "e2el"}
        return [
            f"{names[key]}:{number_text(value)}"
            for key in SLO_METRICS
            if (value := getattr(self, key)) is not None
        ]


@dataclass(frozen=True)
class ServingSpec:
    """A serving task's settings (see the module's docstring)."""

    engine: str
    engine_version: str
    submission: str
    reference: str  # bundle path of the reference config
    policy: FlagPolicy
    fixed: Mapping[str, Any]
    kv_cache_gib: float
    runs: int
    startup_timeout_s: float
    recipe: Recipe | None  # a tiny model (CPU tasks)
    model_path: str | None  # a model on the GPU pool (GPU tasks)
    workload: Workload
    slo: Slo
    objective: str
    rates: tuple[float, ...] = field(default_factory=tuple)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], files: Mapping[str, str]) -> ServingSpec:
        grading = _table(manifest, "grading", "a serving task needs a [grading] table")
        _known(grading, GRADING_KEYS, "grading")
        engine = grading.get("engine", "vllm")
        if engine not in ENGINES:
            raise GradingTableError("grading.engine", f"must be one of: {', '.join(ENGINES)}")
        version = grading.get("engine_version", ENGINES[engine])
        if version != ENGINES[engine]:
            raise GradingTableError(
                "grading.engine_version",
                f"this platform runs {engine} {ENGINES[engine]}, not {version!r}",
            )
        submission = grading.get("submission", "engine.toml")
        if not isinstance(submission, str) or not submission.endswith(".toml"):
            raise GradingTableError("grading.submission", "must be a .toml file name")
        if "/" in submission:
            raise GradingTableError("grading.submission", "must be a file name, not a path")
        policy = _policy(grading)
        fixed = _fixed(grading)
        both = sorted(set(fixed) & policy.allowed)
        if both:
            raise GradingTableError(
                f"grading.fixed.{both[0]}", "is fixed by the task, so solvers may not set it too"
            )
        reference = _config_file(grading, "reference", files)
        hardware = manifest.get("hardware", "cpu")
        recipe, model_path = _model(grading, hardware)
        workload = _workload(grading, files)
        objective, rates = _objective(grading, workload)
        return cls(
            engine=engine,
            engine_version=version,
            submission=submission,
            reference=reference,
            policy=policy,
            fixed=fixed,
            kv_cache_gib=_number(grading, "kv_cache_gib", 1.0, low=0.25, high=512),
            runs=_whole(grading, "runs", 3, low=3, high=20),
            startup_timeout_s=_number(grading, "startup_timeout_s", 300.0, low=10, high=1800),
            recipe=recipe,
            model_path=model_path,
            workload=workload,
            slo=_slo(grading),
            objective=objective,
            rates=rates,
        )

    @property
    def kv_cache_bytes(self) -> int:
        """The KV cache each engine gets, in bytes (the budget vLLM's check counts against)."""
        return int(self.kv_cache_gib * GIB)

    def config_of(self, text: str, *, file: str) -> dict[str, Any]:
        """A config file's flags table; GradingTableError naming the file when it is not
        TOML or sets nothing."""
        return _read_config(text, file)


# -- pieces ---------------------------------------------------------------------------


def _table(parent: Mapping[str, Any], key: str, missing: str, where: str = "") -> Mapping[str, Any]:
    value = parent.get(key)
    if not isinstance(value, Mapping):
        raise GradingTableError(f"{where}{key}", missing)
    return value


def _known(table: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise GradingTableError(f"{where}.{unknown[0]}", f"unknown key; known: {', '.join(keys)}")


def _number(
    table: Mapping[str, Any],
    key: str,
    default: float | None,
    *,
    low: float,
    high: float,
    where: str = "grading",
) -> float:
    value = table.get(key, default)
    if value is None:
        raise GradingTableError(f"{where}.{key}", "is required")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GradingTableError(f"{where}.{key}", "must be a number")
    if not low <= value <= high:
        bounds = f"[{number_text(low)}, {number_text(high)}]"
        raise GradingTableError(f"{where}.{key}", f"must lie in {bounds}")
    return float(value)


def _whole(
    table: Mapping[str, Any],
    key: str,
    default: int | None,
    *,
    low: int,
    high: int,
    where: str = "grading",
) -> int:
    value = table.get(key, default)
    if value is None:
        raise GradingTableError(f"{where}.{key}", "is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise GradingTableError(f"{where}.{key}", "must be a whole number")
    if not low <= value <= high:
        raise GradingTableError(f"{where}.{key}", f"must lie in [{low}, {high}]")
    return value


def _names(grading: Mapping[str, Any], key: str) -> frozenset[str]:
    value = grading.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GradingTableError(f"grading.{key}", "must be a list of engine flag names")
    names = frozenset(normalise(v) for v in value)
    never = sorted(names & NEVER)
    if never:
        raise GradingTableError(
            f"grading.{key}",
            f"--{never[0].replace('_', '-')} runs or loads code, names a file or model, or "
            "moves the engine: no task may let solvers set it",
        )
    unvetted = sorted(names - SETTABLE)
    if unvetted:
        raise GradingTableError(
            f"grading.{key}",
            f"--{unvetted[0].replace('_', '-')} is not an engine argument this platform lets "
            f"solvers set; those it does: {', '.join(sorted(SETTABLE))}",
        )
    return names


def _policy(grading: Mapping[str, Any]) -> FlagPolicy:
    allowed = _names(grading, "allowed")
    if not allowed:
        raise GradingTableError("grading.allowed", "must name at least one flag solvers may set")
    quality = _names(grading, "quality")
    not_allowed = sorted(quality - allowed)
    if not_allowed:
        raise GradingTableError("grading.quality", f"{not_allowed[0]} is not in allowed")
    not_quality = sorted(quality - QUALITY)
    if not_quality:
        raise GradingTableError(
            "grading.quality", f"{not_quality[0]} does not change what the model computes"
        )
    ranges_table = grading.get("ranges", {})
    if not isinstance(ranges_table, Mapping):
        raise GradingTableError("grading.ranges", "must be a table of [low, high] per flag")
    ranges: dict[str, tuple[float, float]] = {}
    for raw, bounds in ranges_table.items():
        name = normalise(str(raw))
        where = f"grading.ranges.{raw}"
        if name not in allowed:
            raise GradingTableError(where, "is not in allowed")
        if (
            not isinstance(bounds, list)
            or len(bounds) != 2
            or not all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
            or bounds[0] > bounds[1]
        ):
            raise GradingTableError(where, "must be [low, high], two numbers, low first")
        ranges[name] = (float(bounds[0]), float(bounds[1]))
    return FlagPolicy(allowed=allowed, quality=quality, ranges=ranges)


def _fixed(grading: Mapping[str, Any]) -> dict[str, Any]:
    fixed = grading.get("fixed", {})
    if not isinstance(fixed, Mapping):
        raise GradingTableError("grading.fixed", "must be a table of engine flags")
    flags = {}
    for raw, value in fixed.items():
        name = normalise(str(raw))
        if name in NEVER:
            raise GradingTableError(
                f"grading.fixed.{raw}", "is set by the platform (model, paths, host), not a task"
            )
        if not isinstance(value, bool | int | float | str):
            raise GradingTableError(f"grading.fixed.{raw}", "must be a plain value")
        flags[name] = value
    return flags


def _config_file(grading: Mapping[str, Any], key: str, files: Mapping[str, str]) -> str:
    path = grading.get(key)
    if not isinstance(path, str) or not path.endswith(".toml"):
        raise GradingTableError(f"grading.{key}", "must name the bundle's .toml config file")
    if path not in files:
        raise GradingTableError(f"grading.{key}", f"{path} is not a file of the bundle")
    _read_config(files[path], path)
    return path


def _read_config(text: str, file: str) -> dict[str, Any]:
    """A config file's flags table; GradingTableError naming the file when it is not
    TOML (tomllib's own refusals, and the nesting and huge numbers it gives up on) or
    sets nothing."""
    try:
        config = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        reason = str(exc) if isinstance(exc, tomllib.TOMLDecodeError) else "too deep or too large"
        raise GradingTableError("config", f"is not TOML: {reason}", file=file) from None
    if not config:
        raise GradingTableError("config", "sets no flag", file=file)
    return config


def _model(grading: Mapping[str, Any], hardware: Any) -> tuple[Recipe | None, str | None]:
    model = _table(grading, "model", "a serving task names its model", "grading.")
    _known(model, ("tiny", "path"), "grading.model")
    if ("tiny" in model) == ("path" in model):
        raise GradingTableError("grading.model", "set exactly one of tiny (a recipe) or path")
    if "path" in model:
        path = model["path"]
        if hardware == "cpu":
            raise GradingTableError(
                "grading.model.path", "a CPU task builds a tiny model: use tiny = { ... }"
            )
        if not isinstance(path, str) or not posixpath.isabs(path):
            raise GradingTableError("grading.model.path", "must be an absolute path")
        return None, path
    tiny = model["tiny"]
    if not isinstance(tiny, Mapping):
        raise GradingTableError("grading.model.tiny", "must be a table of the recipe's settings")
    fields = Recipe.__dataclass_fields__
    for key, value in tiny.items():
        if key not in fields:
            raise GradingTableError(
                f"grading.model.tiny.{key}", f"unknown; known: {', '.join(fields)}"
            )
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1 << 20:
            raise GradingTableError(f"grading.model.tiny.{key}", "must be a whole number")
    recipe = Recipe(**dict(tiny))
    if recipe.hidden_size % recipe.num_attention_heads:
        raise GradingTableError("grading.model.tiny.num_attention_heads", "must divide hidden_size")
    if recipe.num_attention_heads % recipe.num_key_value_heads:
        raise GradingTableError(
            "grading.model.tiny.num_key_value_heads", "must divide num_attention_heads"
        )
    if recipe.parameters() > MAX_TINY_PARAMETERS:
        raise GradingTableError(
            "grading.model.tiny",
            f"is not tiny: {recipe.parameters():,} weights, over {MAX_TINY_PARAMETERS:,}",
        )
    return recipe, None


def _workload(grading: Mapping[str, Any], files: Mapping[str, str]) -> Workload:
    table = _table(grading, "workload", "a serving task states its workload", "grading.")
    where = "grading.workload"
    _known(table, WORKLOAD_KEYS, where)
    dataset = table.get("dataset", "random")
    if dataset not in DATASETS:
        raise GradingTableError(f"{where}.dataset", f"must be one of: {', '.join(DATASETS)}")
    arrival = table.get("arrival", "poisson")
    if arrival not in ARRIVALS:
        raise GradingTableError(f"{where}.arrival", f"must be one of: {', '.join(ARRIVALS)}")
    burstiness = _number(table, "burstiness", 1.0, low=0.05, high=20, where=where)
    if arrival == "poisson" and burstiness != 1.0:
        raise GradingTableError(
            f"{where}.burstiness", 'a Poisson process has burstiness 1: use arrival = "gamma"'
        )
    lengths = table.get("lengths")
    rows: tuple[tuple[int, int], ...] = ()
    if dataset == "lengths":
        if not isinstance(lengths, str) or lengths not in files:
            raise GradingTableError(f"{where}.lengths", "must name a .jsonl file of the bundle")
        rows = _length_rows(lengths, files[lengths])
    elif lengths is not None:
        raise GradingTableError(f"{where}.lengths", 'is for dataset = "lengths" only')
    ignore_eos = table.get("ignore_eos", True)
    if not isinstance(ignore_eos, bool):
        raise GradingTableError(f"{where}.ignore_eos", "must be true or false")
    prefix = dataset == "prefix"
    return Workload(
        dataset=dataset,
        input_len=_whole(table, "input_len", 128, low=1, high=MAX_INPUT_LEN, where=where),
        output_len=_whole(table, "output_len", 32, low=1, high=MAX_OUTPUT_LEN, where=where),
        range_ratio=_number(table, "range_ratio", 0.0, low=0, high=1, where=where),
        lengths=lengths if dataset == "lengths" else None,
        prefix_len=_whole(
            table, "prefix_len", 256 if prefix else 0, low=0, high=1 << 16, where=where
        ),
        prefixes=_whole(table, "prefixes", 4 if prefix else 1, low=1, high=1000, where=where),
        arrival=arrival,
        burstiness=burstiness,
        rate=_number(table, "rate", None, low=0.01, high=10_000, where=where),
        requests=_whole(table, "requests", 60, low=5, high=MAX_REQUESTS, where=where),
        warmup=_whole(table, "warmup", 4, low=0, high=500, where=where),
        seed=_whole(table, "seed", 0, low=0, high=2**31 - 1, where=where),
        ignore_eos=ignore_eos,
        length_rows=rows,
    )


def _length_rows(path: str, text: str) -> tuple[tuple[int, int], ...]:
    rows = [line for line in text.splitlines() if line.strip()]
    if not rows:
        raise GradingTableError("lengths", "holds no requests", file=path)
    found: list[tuple[int, int]] = []
    for number, line in enumerate(rows, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise GradingTableError(f"line {number}", "is not JSON", file=path) from None
        ok = isinstance(row, dict) and all(
            isinstance(row.get(key), int)
            and not isinstance(row.get(key), bool)
            and 0 < row[key] <= most
            for key, most in (("input", MAX_INPUT_LEN), ("output", MAX_OUTPUT_LEN))
        )
        if not ok:
            raise GradingTableError(
                f"line {number}",
                'must be {"input": n, "output": m}, whole numbers from 1 '
                f"(at most {MAX_INPUT_LEN} and {MAX_OUTPUT_LEN})",
                file=path,
            )
        found.append((row["input"], row["output"]))
    if len(found) > MAX_REQUESTS:
        raise GradingTableError("lengths", f"holds more than {MAX_REQUESTS} requests", file=path)
    return tuple(found)


def _slo(grading: Mapping[str, Any]) -> Slo:
    table = _table(grading, "slo", "a serving task states its latency SLOs", "grading.")
    where = "grading.slo"
    _known(table, (*SLO_METRICS, "attainment"), where)
    values = {
        key: _number(table, key, None, low=0.001, high=3_600_000, where=where)
        if key in table
        else None
        for key in SLO_METRICS
    }
    if all(value is None for value in values.values()):
        raise GradingTableError(where, f"set at least one of: {', '.join(SLO_METRICS)}")
    attainment = _number(table, "attainment", 0.9, low=0.01, high=1, where=where)
    return Slo(values["ttft_ms"], values["tpot_ms"], values["e2el_ms"], attainment)


def _objective(grading: Mapping[str, Any], workload: Workload) -> tuple[str, tuple[float, ...]]:
    table = grading.get("objective", {"kind": "goodput"})
    if not isinstance(table, Mapping):
        raise GradingTableError("grading.objective", "must be a table")
    _known(table, ("kind", "rates"), "grading.objective")
    kind = table.get("kind", "goodput")
    if kind not in OBJECTIVES:
        raise GradingTableError(
            "grading.objective.kind", f"must be one of: {', '.join(OBJECTIVES)}"
        )
    rates = table.get("rates")
    if kind == "goodput":
        if rates is not None:
            raise GradingTableError("grading.objective.rates", 'is for kind = "max_rate" only')
        return kind, (workload.rate,)
    if (
        not isinstance(rates, list)
        or not 2 <= len(rates) <= MAX_RATES
        or not all(isinstance(r, int | float) and not isinstance(r, bool) and r > 0 for r in rates)
        or sorted(rates) != rates
        or len(set(rates)) != len(rates)
    ):
        raise GradingTableError(
            "grading.objective.rates",
            f"must be 2 to {MAX_RATES} request rates, positive and increasing",
        )
    return kind, tuple(float(r) for r in rates)
