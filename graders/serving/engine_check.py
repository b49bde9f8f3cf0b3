"""vLLM's own checks of an engine config, before anything starts.

Runs in the serving environment (``.venv-serving``), never in the web app:
``python -m graders.serving.engine_check`` reads a JSON request on stdin and
writes a JSON answer on stdout::

    {"flags": {...},   # the solver's, already through graders.serving.flags
     "fixed": {...},   # the task's own engine arguments (dtype, max_model_len, ...)
     "model": "/path/to/model", "gpus": 0, "kv_cache_bytes": 1073741824}

    {"ok": true, "errors": [], "engine": {...}}   # or errors: [{"flag", "message"}]

The checks are vLLM's, not a copy of them: each flag must be one of vLLM's
engine arguments (``AsyncEngineArgs.add_cli_args``) and parse as its parser
parses it; the whole config must pass ``create_engine_config`` (pydantic
validation of every config class, and vLLM's cross-checks between them).
Then the hardware budget: parallel sizes against the GPUs of the task's
hardware class (none on a CPU host: one process), and the KV cache one
sequence of ``max_model_len`` tokens needs against the cache the task gives.

What it reads: the request and the model's config files. It loads no weights
and starts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import sys
from pathlib import Path
from typing import Any


def _parser() -> Any:
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(exit_on_error=False)
    AsyncEngineArgs.add_cli_args(parser)
    return parser


def _argv(actions: dict[str, Any], name: str, value: Any) -> list[str] | str:
    """One flag as vLLM's command line takes it, or why it cannot be."""
    action = actions[name]
    option = next(o for o in action.option_strings if o.startswith("--"))
    if isinstance(action, argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            return "must be true or false"
        return [option if value else "--no-" + option[2:]]
    if isinstance(action, argparse._StoreTrueAction):
        if value is not True:
            return "can only be set to true"
        return [option]
    if isinstance(value, bool):
        return "takes a value, not true or false"
    if isinstance(value, dict | list):
        return [option, json.dumps(value, sort_keys=True)]
    return [option, str(value)]


def _unknown(name: str, actions: dict[str, Any]) -> str:
    close = difflib.get_close_matches(name, list(actions), n=1)
    hint = f" (did you mean --{close[0].replace('_', '-')}?)" if close else ""
    return f"is not an argument of this engine{hint}"


def _validation_errors(exc: Exception, flags: dict[str, Any]) -> list[dict[str, str]]:
    """pydantic's errors, each named by the flag it concerns where one matches."""
    errors = []
    details = exc.errors() if hasattr(exc, "errors") else []
    for detail in details:
        loc = [str(part) for part in detail.get("loc", ())]
        message = str(detail.get("msg", ""))[:1000]
        flag = next((part for part in loc if part in flags), None)
        errors.append({"flag": flag or _named(message, flags), "message": message})
    return errors or [{"flag": _named(str(exc), flags), "message": str(exc)[:1000]}]


def _named(message: str, flags: dict[str, Any]) -> str:
    """The solver's flag a message of vLLM's names, if any."""
    for name in sorted(flags, key=len, reverse=True):
        if name in message or name.replace("_", "-") in message:
            return name
    return "config"


def _kv_bytes_per_token(config: Any) -> int:
    """What one token of one sequence holds in the KV cache: keys and values, every layer."""
    model = config.model_config
    layers = model.get_num_layers(config.parallel_config)
    heads = model.get_num_kv_heads(config.parallel_config)
    size = config.cache_config.cache_dtype
    bytes_per = 1 if "fp8" in str(size) or "int8" in str(size) else model.dtype.itemsize
    return int(2 * layers * heads * model.get_head_size() * bytes_per)


def check(request: dict[str, Any]) -> dict[str, Any]:
    flags: dict[str, Any] = dict(request.get("flags") or {})
    fixed: dict[str, Any] = dict(request.get("fixed") or {})
    parser = _parser()
    actions = {action.dest: action for action in parser._actions if action.option_strings}
    errors: list[dict[str, str]] = []
    argv = ["--model", str(request["model"])]
    for source in (fixed, flags):
        for name, value in source.items():
            if name not in actions:
                errors.append({"flag": name, "message": _unknown(name, actions)})
                continue
            part = _argv(actions, name, value)
            if isinstance(part, str):
                errors.append({"flag": name, "message": part})
            else:
                argv += part
    if errors:
        return {"ok": False, "errors": errors}
    from vllm.engine.arg_utils import AsyncEngineArgs

    try:
        namespace = parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit, ValueError, TypeError) as exc:
        text = str(exc)
        return {"ok": False, "errors": [{"flag": _named(text, flags), "message": text[:1000]}]}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            config = AsyncEngineArgs.from_cli_args(namespace).create_engine_config()
    except Exception as exc:  # pydantic's ValidationError, vLLM's ValueErrors
        return {"ok": False, "errors": _validation_errors(exc, flags)}
    return _budget(config, request, flags)


def _budget(config: Any, request: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    parallel = config.parallel_config
    workers = (
        parallel.tensor_parallel_size
        * parallel.pipeline_parallel_size
        * parallel.data_parallel_size
    )
    gpus = int(request.get("gpus") or 0)
    errors = []
    if workers > max(gpus, 1):
        errors.append(
            {
                "flag": _named("tensor_parallel_size pipeline_parallel_size", flags),
                "message": f"needs {workers} devices; this task's hardware has {max(gpus, 1)}",
            }
        )
    scheduler, model = config.scheduler_config, config.model_config
    per_token = _kv_bytes_per_token(config)
    kv_bytes = int(request.get("kv_cache_bytes") or 0)
    needed = per_token * model.max_model_len
    if kv_bytes and needed > kv_bytes:
        errors.append(
            {
                "flag": _named("max_model_len", flags),
                "message": f"one sequence of {model.max_model_len} tokens needs {needed} bytes "
                f"of KV cache; the task gives {kv_bytes}",
            }
        )
    weights = sum(p.stat().st_size for p in Path(model.model).glob("*.safetensors"))
    return {
        "ok": not errors,
        "errors": errors,
        "engine": {
            "max_num_seqs": scheduler.max_num_seqs,
            "max_num_batched_tokens": scheduler.max_num_batched_tokens,
            "enable_chunked_prefill": bool(scheduler.enable_chunked_prefill),
            "enable_prefix_caching": bool(config.cache_config.enable_prefix_caching),
            "max_model_len": model.max_model_len,
            "block_size": config.cache_config.block_size,
            "kv_bytes_per_token": per_token,
            "kv_cache_tokens": kv_bytes // per_token if kv_bytes and per_token else None,
            "weights_bytes": weights,
            "devices": workers,
        },
    }


def main() -> int:
    """One request, or a list of them (one answer each, in order): a grading checks the
    reference's config and the submission's with one start of vLLM's imports."""
    request = json.loads(sys.stdin.read())
    # vLLM logs to stdout and stderr as it builds configs: the answer is the last line.
    answer = [check(r) for r in request] if isinstance(request, list) else check(request)
    sys.stdout.write("\n" + json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
