"""The catalog's profiling tasks against the generator that made their traces.

Each generated task keeps ``generate.json`` (the generator's settings, seed,
and which of the generator's true values each key field is). Regenerating gives
the same traces, and the key the task's own script derived from the traces
(``key.json``; ``test_catalog`` checks the script still derives it) agrees with
the values the generator planted, computed by independent code from the
timeline it built.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from graders.profiling.generate import generate, write_trace

CATALOG = Path(__file__).resolve().parents[3] / "reference_solutions"
GENERATED = sorted(p.parent for p in CATALOG.glob("prof-*/generate.json"))
# Numbers from two computations of the same timeline: the key rounds to 0.01 %
# and to the nanosecond.
ABS_TOL = 0.011


def test_the_catalog_has_generated_profiling_tasks():
    assert len(GENERATED) >= 6


def _truth_value(truth: dict[str, Any], path: str) -> Any:
    value: Any = truth
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _expected(truth: dict[str, Any], rule: str | dict[str, Any]) -> Any:
    if isinstance(rule, str):
        return _truth_value(truth, rule)
    if "pct_of" in rule:
        part, whole = (_truth_value(truth, p) for p in rule["pct_of"])
        return 100.0 * part / whole
    per_step = _truth_value(truth, rule["per_step"]) / len(truth["steps"])
    return per_step * rule.get("scale", 1.0)


@pytest.mark.parametrize("bundle", GENERATED, ids=lambda p: p.name)
def test_traces_regenerate_from_the_seed(bundle, tmp_path):
    settings = json.loads((bundle / "generate.json").read_text())
    task = generate(settings["config"], settings["seed"])
    stored = sorted((bundle / "traces").glob("rank*.json.gz"))
    assert len(stored) == len(task.traces)
    for rank, trace in enumerate(task.traces):
        fresh = write_trace(trace, tmp_path / f"rank{rank}.json.gz", gzip=True)
        # The JSON inside, byte for byte (gzip's own bytes may differ between zlib builds).
        assert gzip.decompress(fresh.read_bytes()) == gzip.decompress(stored[rank].read_bytes())


@pytest.mark.parametrize("bundle", GENERATED, ids=lambda p: p.name)
def test_key_agrees_with_what_the_generator_planted(bundle):
    settings = json.loads((bundle / "generate.json").read_text())
    truth = generate(settings["config"], settings["seed"]).truth
    key = json.loads((bundle / "key.json").read_text())
    assert settings["truth"], "generate.json maps no key field to the generator's truth"
    for field, rule in settings["truth"].items():
        wanted, derived = _expected(truth, rule), key[field]
        if isinstance(wanted, list):
            assert set(derived) == set(wanted), field
        elif isinstance(wanted, int | float) and not isinstance(wanted, bool):
            assert math.isclose(derived, wanted, rel_tol=1e-6, abs_tol=ABS_TOL), (
                f"{bundle.name}: {field} derived {derived}, planted {wanted}"
            )
        else:
            assert derived == wanted, field


@pytest.mark.parametrize("bundle", GENERATED, ids=lambda p: p.name)
def test_the_key_names_the_bottleneck_the_task_plants(bundle):
    """The category is the author's reading of the trace; it must be the one the
    task's settings plant (the key script refuses a trace that does not show it)."""
    settings = json.loads((bundle / "generate.json").read_text())["config"]
    planted = {
        "tiny_kernels": "host_launch_bound",
        "host_syncs": "host_sync",
        "pageable_copies": "pageable_copies",
        "dataloader_stall_us": "data_loader",
        "straggler_rank": "load_imbalance",
    }
    expected = [category for setting, category in planted.items() if setting in settings]
    if not expected:
        expected = ["exposed_communication" if settings.get("allreduce_us") else "compute_bound"]
    key = json.loads((bundle / "key.json").read_text())
    assert [key["bottleneck"]] == expected
