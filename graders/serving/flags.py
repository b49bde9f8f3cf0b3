"""Which engine flags a serving task may let a solver set, and how a config becomes argv.

A solver's engine config is a TOML table of vLLM engine arguments by their
command-line names (``max_num_seqs = 8``, dashes or underscores alike). Three
gates stand before anything starts, in this order:

1. this module's policy, the same for every task: only the vetted flags of
   ``SETTABLE`` are ever a solver's (those that run or load code, name paths
   or models, move the engine, cap outputs or override the KV budget are
   not; ``NEVER`` names the worst, for clearer refusals); quality-changing
   flags (quantisation, a KV cache dtype, model-free speculative decoding)
   only where the task allows them; values are plain data (``value_problem``);
2. the task's allow-list (``allowed``) and its ranges per flag;
3. vLLM's own argument parser and config checks (``engine_check.py``, run in
   the serving environment): an unknown flag, a value of the wrong type or
   out of vLLM's range, a combination its configs refuse.

Pure Python, no vLLM: the web app checks bundles and configs with it too.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# Never a solver's: they run or load code, name files or models, or move the engine.
NEVER = frozenset(
    {
        "trust_remote_code",
        "worker_cls",
        "worker_extension_cls",
        "logits_processors",
        "logits_processor_pattern",
        "middleware",
        "chat_template",
        "chat_template_content_format",
        "tool_parser_plugin",
        "tool_call_parser",
        "reasoning_parser_plugin",
        "io_processor_plugin",
        "model_loader_extra_config",
        "load_format",
        "hf_overrides",
        "hf_config_path",
        "model",
        "model_impl",
        "tokenizer",
        "tokenizer_mode",
        "revision",
        "code_revision",
        "tokenizer_revision",
        "download_dir",
        "served_model_name",
        "allowed_local_media_path",
        "allowed_media_domains",
        "lora_modules",
        "enable_lora",
        "qlora_adapter_name_or_path",
        "pt_load_map_location",
        "host",
        "port",
        "uds",
        "root_path",
        "api_key",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_ca_certs",
        "distributed_executor_backend",
        "kv_transfer_config",
        "kv_events_config",
        "ec_transfer_config",
        "profiler_config",
        "weight_transfer_config",
        "additional_config",
        "compilation_config",
        "otlp_traces_endpoint",
        "collect_detailed_traces",
    }
)

# Change what the model computes: only where a task allows them, by name.
QUALITY = frozenset(
    {
        "quantization",
        "kv_cache_dtype",
        "speculative_config",
        "spec_method",
        "spec_model",
        "spec_tokens",
        "dtype",
    }
)

# The only engine arguments a solver may ever set, whatever a task allows: scheduling,
# batching, caching, parallelism and memory placement, and the quality-changing flags
# above. vLLM has some 250 arguments, and new ones come with each release; a flag
# is a solver's only once someone has read what it does (flags that cap outputs,
# override the KV cache budget, import classes, read files or open ports are not).
SETTABLE = QUALITY - {"spec_method", "spec_model", "spec_tokens"} | frozenset(
    {
        "max_num_seqs",
        "max_num_batched_tokens",
        "long_prefill_token_threshold",
        "enable_chunked_prefill",
        "scheduling_policy",
        "async_scheduling",
        "enable_prefix_caching",
        "prefix_caching_hash_algo",
        "block_size",
        "max_model_len",
        "enforce_eager",
        "cpu_offload_gb",
        "attention_backend",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "enable_expert_parallel",
    }
)
# speculative_config: model-free drafting only (n-gram lookup), verified by the model.
SPECULATIVE_KEYS = frozenset(
    {"method", "num_speculative_tokens", "prompt_lookup_max", "prompt_lookup_min"}
)
SPECULATIVE_METHODS = frozenset({"ngram"})
MAX_DEPTH = 4
MAX_INT = 2**53

# Keys that, anywhere inside a JSON-valued flag, name a file, a model or code.
_PATH_KEYS = re.compile(r"(^|_)(model|path|dir|file|cls|class|module|plugin|url|endpoint)s?$")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

MAX_VALUE_CHARS = 2000


def normalise(name: str) -> str:
    """A flag's name as vLLM's parser stores it: ``max-num-seqs`` -> ``max_num_seqs``."""
    return name.strip().lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class FlagError:
    """A problem with one flag of a config, for the solver."""

    flag: str
    message: str

    def __str__(self) -> str:
        return f"--{self.flag.replace('_', '-')}: {self.message}"


@dataclass(frozen=True)
class FlagPolicy:
    """A task's gate: the flags a solver may set, the quality-changing ones among them the
    author allows, and per flag an inclusive numeric range."""

    allowed: frozenset[str]
    quality: frozenset[str] = frozenset()
    ranges: Mapping[str, tuple[float, float]] | None = None

    def check(self, config: Mapping[str, Any]) -> tuple[dict[str, Any], list[FlagError]]:
        """The config with normalised names, and every problem this gate finds."""
        flags: dict[str, Any] = {}
        errors: list[FlagError] = []
        for raw_name, value in config.items():
            name = normalise(str(raw_name))
            if not _NAME.match(name):
                errors.append(FlagError(str(raw_name)[:64], "is not a flag name"))
                continue
            if name in flags:
                errors.append(FlagError(name, "is set twice"))
                continue
            problem = self._problem(name, value)
            if problem:
                errors.append(FlagError(name, problem))
            else:
                flags[name] = value
        return flags, errors

    def _problem(self, name: str, value: Any) -> str:
        if name in NEVER:
            return "runs or loads code, names a file or model, or moves the engine: never allowed"
        if name not in SETTABLE:
            close = difflib.get_close_matches(name, sorted(self.allowed & SETTABLE), n=1)
            hint = f" (did you mean --{close[0].replace('_', '-')}?)" if close else ""
            return f"is not an engine argument this platform lets solvers set{hint}"
        if name in QUALITY and name not in self.quality:
            return "changes what the model computes, and this task does not allow it"
        if name not in self.allowed:
            shown = ", ".join(sorted(self.allowed)) or "none"
            return f"is not one this task lets you set (allowed: {shown})"
        problem = value_problem(value)
        if problem:
            return problem
        if len(json.dumps(value)) > MAX_VALUE_CHARS:
            return f"value is longer than {MAX_VALUE_CHARS} characters"
        if isinstance(value, dict | list):
            bad = next(_path_keys(value), None)
            if bad is not None:
                return f"names a file, a model or code inside its value ({bad!r})"
        if name == "speculative_config":
            return _speculative_problem(value)
        bounds = (self.ranges or {}).get(name)
        if bounds is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return "must be a number"
            low, high = bounds
            if not low <= value <= high:
                return f"must be between {number_text(low)} and {number_text(high)} for this task"
        return ""


def value_problem(value: Any, depth: int = 0) -> str:
    """What is wrong with a flag's value as data, before anything reads it: only
    booleans, numbers vLLM can take, short strings that are not options or JSON, and
    shallow tables and lists of them."""
    if depth > MAX_DEPTH:
        return f"nests tables deeper than {MAX_DEPTH}"
    if isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return "" if abs(value) <= MAX_INT else "is too large a number"
    if isinstance(value, float):
        return "" if math.isfinite(value) else "must be a finite number"
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            return f"value is longer than {MAX_VALUE_CHARS} characters"
        if value.startswith("-"):
            return "a value may not start with '-' (it would read as an option)"
        if value.lstrip().startswith(("{", "[")):
            return "write a table as a TOML table, not as a JSON string"
        return ""
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return "must be a boolean, a number, a string or a table"
    for item in items:
        problem = value_problem(item, depth + 1)
        if problem:
            return problem
    return ""


def _speculative_problem(value: Any) -> str:
    if not isinstance(value, dict):
        return "must be a table"
    unknown = sorted(set(value) - SPECULATIVE_KEYS)
    if unknown:
        return f"may set only {', '.join(sorted(SPECULATIVE_KEYS))}, not {unknown[0]!r}"
    if value.get("method") not in SPECULATIVE_METHODS:
        return f"method must be one of: {', '.join(sorted(SPECULATIVE_METHODS))} (model-free)"
    return ""


def _path_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if _PATH_KEYS.search(str(key)):
                yield str(key)
            yield from _path_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _path_keys(item)


def number_text(value: float) -> str:
    """A number as a person writes it: ``4`` rather than ``4.0``."""
    return str(int(value)) if float(value).is_integer() else str(value)


def to_argv(flags: Mapping[str, Any]) -> list[str]:
    """Command-line arguments for vLLM: ``--flag`` / ``--no-flag`` for booleans, JSON
    for tables and lists, the value as text otherwise."""
    argv: list[str] = []
    for name, value in flags.items():
        option = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(option if value else "--no-" + name.replace("_", "-"))
        elif isinstance(value, dict | list):
            argv += [option, json.dumps(value, sort_keys=True)]
        else:
            argv += [option, str(value)]
    return argv
