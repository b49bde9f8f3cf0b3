"""Serving tasks' models on a grading host: tiny ones built from their recipe, once.

A CPU task's model is a recipe (``tinymodel.Recipe``); the first grading that
needs it builds it with the serving environment into a cache folder named by
the recipe's digest, and every later one reuses it. The build goes to a
temporary folder first and is renamed into place, so a half-built model is
never used, and two workers building the same one at once both end with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path

from .engine import ROOT, serving_python
from .spec import ServingSpec
from .tinymodel import FILES, Recipe

CACHE = Path(os.environ.get("BENCHWRIGHT_MODEL_CACHE", ROOT / "var" / "serving-models"))
BUILD_TIMEOUT_S = 600.0


class ModelBuildError(Exception):
    """The serving environment could not build a tiny model."""


def tiny_model(recipe: Recipe, cache: Path = CACHE) -> Path:
    """The folder holding the recipe's model, built if it is not there yet."""
    target = cache / f"tiny-llama-{recipe.digest()}"
    if all((target / name).exists() for name in FILES):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
    try:
        completed = subprocess.run(
            [
                str(serving_python()),
                "-m",
                "graders.serving.tinymodel",
                str(building),
                _json(recipe),
            ],
            cwd=ROOT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
            capture_output=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
        if completed.returncode != 0:
            tail = completed.stderr.decode(errors="replace")[-2000:]
            raise ModelBuildError(f"building the tiny model failed: {tail}")
        building.chmod(0o755)
        try:
            building.rename(target)
        except OSError:  # another worker put it there first
            if not target.exists():
                raise
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return target


def task_model(spec: ServingSpec) -> Path:
    """The folder of a task's model on this host: its tiny model, built if need be, or
    the path on the GPU pool it names."""
    if spec.recipe is not None:
        return tiny_model(spec.recipe)
    return Path(spec.model_path or "")


def _json(recipe: Recipe) -> str:
    return json.dumps(asdict(recipe), sort_keys=True)
