"""A config through all three gates: the platform's policy, the task's allow-list and
ranges (``flags.FlagPolicy``), then vLLM's own parser and config checks
(``engine_check``, run in the serving environment)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import ROOT, serving_python
from .flags import FlagError, FlagPolicy

CHECK_TIMEOUT_S = 180.0


class CheckUnavailable(Exception):
    """vLLM's checks could not be run (no serving environment, a crash): the platform's
    problem, never the config's."""


@dataclass
class ConfigCheck:
    """A config's flags (normalised), its problems, and vLLM's resolved engine settings."""

    flags: dict[str, Any]
    errors: list[FlagError] = field(default_factory=list)
    engine: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors


def check_config(
    config: Mapping[str, Any],
    policy: FlagPolicy,
    *,
    fixed: Mapping[str, Any],
    model_dir: Path,
    gpus: int = 0,
    kv_cache_bytes: int = 0,
) -> ConfigCheck:
    """Every problem of a config, each naming its flag; nothing is started."""
    return check_configs(
        [config], policy, fixed=fixed, model_dir=model_dir, gpus=gpus, kv_cache_bytes=kv_cache_bytes
    )[0]


def check_configs(
    configs: Sequence[Mapping[str, Any]],
    policy: FlagPolicy,
    *,
    fixed: Mapping[str, Any],
    model_dir: Path,
    gpus: int = 0,
    kv_cache_bytes: int = 0,
) -> list[ConfigCheck]:
    """``check_config`` for several configs, with one run of vLLM's checks for all the
    configs the platform's gate passes."""
    checks = []
    for config in configs:
        flags, errors = policy.check(config)
        checks.append(ConfigCheck(flags, errors))
    asked = [check for check in checks if check.ok]
    if not asked:
        return checks
    requests = [
        {
            "flags": check.flags,
            "fixed": dict(fixed),
            "model": str(model_dir),
            "gpus": gpus,
            "kv_cache_bytes": kv_cache_bytes,
        }
        for check in asked
    ]
    answers = _run_engine_check(requests)
    for check, answer in zip(asked, answers, strict=True):
        check.errors = [
            FlagError(str(item.get("flag") or "config"), str(item.get("message") or ""))
            for item in answer.get("errors") or []
        ]
        check.engine = dict(answer.get("engine") or {})
    return checks


def _run_engine_check(requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if not serving_python().exists():
        raise CheckUnavailable(f"no serving environment at {serving_python().parent.parent}")
    try:
        completed = subprocess.run(
            [str(serving_python()), "-m", "graders.serving.engine_check"],
            input=json.dumps(list(requests)).encode(),
            cwd=ROOT,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": os.environ.get("HOME", "/tmp"),  # noqa: S108
                "PYTHONPATH": str(ROOT),
                "HF_HUB_OFFLINE": "1",
                "VLLM_NO_USAGE_STATS": "1",
            },
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CheckUnavailable("vLLM's config check did not finish in time") from exc
    lines = completed.stdout.decode(errors="replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if (
        completed.returncode != 0
        or not isinstance(answer, list)
        or len(answer) != len(requests)
        or not all(isinstance(item, dict) for item in answer)
    ):
        tail = completed.stderr.decode(errors="replace")[-2000:]
        raise CheckUnavailable(f"vLLM's config check failed: {tail}")
    return answer


def check_draft_config(
    manifest: Mapping[str, Any], files: Mapping[str, str], path: str
) -> dict[str, Any]:
    """A config file of a draft (the reference, as its author saves it) through the
    gates a grading puts it through, with the task's tiny model built if need be.

    Runs on a grading host, where the serving environment is; the answer is plain data
    for the authoring page: ``{"flags", "errors": [{"flag", "message"}], "engine"}``, or
    ``{"unavailable": why}`` when the checks themselves could not run.
    """
    from graders.contract import GradingTableError
    from sandboxes.hardware import detect

    from .devices import grading_gpus, platform_flags
    from .models import ModelBuildError, task_model
    from .spec import ServingSpec

    try:
        spec = ServingSpec.from_manifest(manifest, files)
        config = spec.config_of(files[path], file=path)
    except GradingTableError as error:
        return {"flags": {}, "errors": [{"flag": "config", "message": str(error)}], "engine": {}}
    gpus = grading_gpus(str(manifest.get("hardware", "cpu")), detect().get("gpu"))
    if isinstance(gpus, str):
        return {"unavailable": gpus}
    try:
        model_dir = task_model(spec)
        check = check_config(
            config,
            spec.policy,
            fixed={**spec.fixed, **platform_flags(spec, gpus)},
            model_dir=model_dir,
            gpus=len(gpus),
            kv_cache_bytes=spec.kv_cache_bytes,
        )
    except (CheckUnavailable, ModelBuildError) as error:
        return {"unavailable": str(error)}
    return {
        "flags": check.flags,
        "errors": [{"flag": e.flag, "message": e.message} for e in check.errors],
        "engine": check.engine,
    }
