"""Which engine flags a serving task may let a solver set, and how a config becomes argv.

A solver's engine config is a TOML table of vLLM engine arguments by their
command-line names (``max_num_seqs = 8``, dashes or underscores alike). Three
gates stand before anything starts, in this order:

1. this module's policy, the same for every task: flags that run code or load
   it (``trust_remote_code``, worker classes, plugins, logits processors,
   templates), that name paths or models (``model``, ``tokenizer``,
   ``download_dir``, a draft model inside ``speculative_config``), or that
   change where the engine listens (``host``, ``port``, ``uds``) are never a
   solver's, whatever a task says; quality-changing flags (quantisation, a KV
   cache dtype, speculative decoding) only where the task allows them;
2. the task's allow-list (``allowed``) and its ranges per flag;
3. vLLM's own argument parser and config checks (``engine_check.py``, run in
   the serving environment): an unknown flag, a value of the wrong type or
   out of vLLM's range, a combination its configs refuse.

Pure Python, no vLLM: the web app checks bundles and configs with it too.
"""

from __future__ import annotations

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
        if name in QUALITY and name not in self.quality:
            return "changes what the model computes, and this task does not allow it"
        if name not in self.allowed:
            shown = ", ".join(sorted(self.allowed)) or "none"
            return f"is not one this task lets you set (allowed: {shown})"
        if not isinstance(value, bool | int | float | str | dict | list):
            return "must be a boolean, a number, a string or a table"
        if isinstance(value, float) and not math.isfinite(value):
            return "must be a finite number"
        if len(json.dumps(value)) > MAX_VALUE_CHARS:
            return f"value is longer than {MAX_VALUE_CHARS} characters"
        if isinstance(value, dict | list):
            bad = next(_path_keys(value), None)
            if bad is not None:
                return f"names a file, a model or code inside its value ({bad!r})"
        bounds = (self.ranges or {}).get(name)
        if bounds is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return "must be a number"
            low, high = bounds
            if not low <= value <= high:
                return f"must be between {number_text(low)} and {number_text(high)} for this task"
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
