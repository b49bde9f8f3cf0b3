"""Serving tests run vLLM's CPU build from the serving environment (``make serving-deps``)
and a tiny model built from its recipe, once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.serving.engine import serving_available
from graders.serving.models import tiny_model
from graders.serving.tinymodel import Recipe


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    problem = serving_available()
    assert not problem, problem
    return tiny_model(Recipe(), cache=tmp_path_factory.mktemp("serving-models"))
