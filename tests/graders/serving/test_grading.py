"""Serving gradings with real engines: the reference config against a submission's, in
two sandboxes, interleaved runs of one workload measured by vLLM's own client."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from graders.serving.grading import (
    Point,
    ServingResult,
    Side,
    _settled,
    grade_serving,
    requests_at,
    sustainable_rate,
    workload_args,
)
from graders.serving.spec import ServingSpec
from sandboxes import get_backend

# A real engine under load measures the whole host: these run alone (see scripts/test.sh).
pytestmark = [pytest.mark.slow, pytest.mark.serial]

MANIFEST: dict[str, Any] = {
    "kind": "serving",
    "hardware": "cpu",
    "grading": {
        "reference": "reference/engine.toml",
        "allowed": ["max_num_seqs", "max_model_len", "enable_prefix_caching"],
        "fixed": {"dtype": "bfloat16", "enforce_eager": True},
        "kv_cache_gib": 1,
        "runs": 3,
        "startup_timeout_s": 300,
        "model": {"tiny": {}},
        # Faster than one sequence at a time can serve (a few per second here), well
        # within what sixteen at a time can.
        "workload": {
            "dataset": "random",
            "input_len": 256,
            "output_len": 32,
            "rate": 12,
            "requests": 24,
            "warmup": 2,
            "seed": 5,
        },
        "slo": {"ttft_ms": 1500, "tpot_ms": 300, "attainment": 0.8},
    },
}
# One sequence at a time: under 12 requests a second, requests queue for their first token.
REFERENCE = {"max_num_seqs": 1, "max_model_len": 1024}
SPEC = ServingSpec.from_manifest(MANIFEST, {"reference/engine.toml": "max_num_seqs = 1\n"})


def _grade(model_dir: Path, config: dict[str, Any]) -> ServingResult:
    return grade_serving(SPEC, REFERENCE, config, model_dir=model_dir, backend=get_backend("bwrap"))


@pytest.fixture(scope="module")
def batched(model_dir: Path) -> ServingResult:
    return _grade(model_dir, {"max_num_seqs": 16, "max_model_len": 1024})


def test_a_config_that_batches_beats_one_that_serves_one_at_a_time(batched: ServingResult) -> None:
    assert batched.verdict == "accepted", (batched.reason, batched.as_dict())
    assert len(batched.reference.runs) == len(batched.submission.runs) == 3
    assert batched.goodput_ratio is not None and batched.goodput_ratio > 1.0
    low, high = batched.goodput_ratio_ci or (0, 0)
    assert low <= batched.goodput_ratio <= high
    assert batched.attainment is not None and batched.attainment >= 0.8


def test_each_run_carries_vllms_figures_and_the_same_seed_on_both_sides(
    batched: ServingResult,
) -> None:
    for ref_run, sub_run in zip(batched.reference.runs, batched.submission.runs, strict=True):
        assert ref_run.seed == sub_run.seed
        for run in (ref_run, sub_run):
            assert run.figures["completed"] == 24 and run.figures["failed"] == 0
            assert run.figures["total_output_tokens"] == 24 * 32  # ignore_eos
            assert 0 < run.figures["median_ttft_ms"] <= run.figures["p99_ttft_ms"]
    # One sequence at a time queues the first tokens: the reference's TTFT is worse.
    ref_ttft = batched.reference.median("median_ttft_ms")
    sub_ttft = batched.submission.median("median_ttft_ms")
    assert ref_ttft is not None and sub_ttft is not None and ref_ttft > sub_ttft
    assert batched.submission.engine["max_num_seqs"] == 16
    assert set(batched.phases_s) >= {
        "config_check",
        "engine_start",
        "warmup",
        "workload",
        "teardown",
    }
    assert "tpot" in batched.semantics


# A context shorter than the prompts (every request rejected: runtime_error, "failed
# 100.0% of the requests") is the catalog's shared-prefix task's negative, graded in
# test_catalog_tasks.py: its engines are not started twice.


def test_a_refused_config_starts_nothing(model_dir: Path) -> None:
    result = _grade(model_dir, {"max_num_seqs": 16, "block_size": 8})
    assert result.verdict == "compile_error"
    assert result.config_errors == [
        "--block-size: is not one this task lets you set "
        "(allowed: enable_prefix_caching, max_model_len, max_num_seqs)"
    ]
    assert result.reference.runs == [] and "engine_start" not in result.phases_s


def test_the_workload_is_vllms_command_line() -> None:
    args = workload_args(SPEC.workload, SPEC, seed=9, requests=24)
    assert args[:8] == [
        "--dataset-name", "random", "--random-input-len", "256",
        "--random-output-len", "32", "--random-range-ratio", "0.0",
    ]  # fmt: skip
    assert "--ignore-eos" in args and args[args.index("--seed") + 1] == "9"
    assert args[args.index("--goodput") + 1 : args.index("--goodput") + 3] == [
        "ttft:1500",
        "tpot:300",
    ]
    prefix = copy.deepcopy(MANIFEST)
    prefix["grading"]["workload"].update(dataset="prefix", prefix_len=128, prefixes=2)
    spec = ServingSpec.from_manifest(prefix, {"reference/engine.toml": "max_num_seqs = 1\n"})
    args = workload_args(spec.workload, spec, seed=1, requests=4)
    assert args[:2] == ["--dataset-name", "prefix_repetition"]
    assert args[args.index("--prefix-repetition-num-prefixes") + 1] == "2"


def _climbed(points: list[tuple[float, float]], wanted: float = 0.8) -> Side:
    side = Side("submission")
    for rate, attainment in points:
        side.points.append(Point(rate, attainment, 0.0, None, None, attainment >= wanted))
    return side


def test_the_highest_sustainable_rate_lies_between_the_last_rate_sustained_and_the_next() -> None:
    side = _climbed([(4, 1.0), (8, 0.9), (16, 0.5)])
    assert sustainable_rate(side, 0.8)
    # 0.9 at 8/s and 0.5 at 16/s: 0.8 is crossed a quarter of the way, at 10/s.
    assert side.max_rate == 10.0 and side.max_rate_bracket == (8, 16)
    top = _climbed([(4, 1.0), (8, 0.95)])
    assert sustainable_rate(top, 0.8)
    assert top.max_rate == 8 and top.max_rate_bracket == (8, math.inf)
    assert not sustainable_rate(_climbed([(4, 0.5)]), 0.8)


def test_a_climb_ends_once_the_submission_missed_the_first_rate() -> None:
    """Its verdict is a wrong answer whatever the reference's climb finds; a miss at a
    later rate leaves the score to the reference's climb."""
    missed = _settled(_climbed([(4, 0.5)]))
    assert missed == "the submission met the SLOs at none of the task's rates"
    assert _settled(_climbed([(4, 1.0), (8, 0.5)])) == ""
    assert _settled(_climbed([(4, 1.0)])) == ""


def test_a_run_at_a_higher_rate_lasts_as_long_not_as_many_requests() -> None:
    # The workload: 24 requests at 12 a second, two seconds of arrivals.
    assert requests_at(SPEC.workload, 12) == 24
    assert requests_at(SPEC.workload, 48) == 96
    assert requests_at(SPEC.workload, 3) == 24  # never fewer than the workload's own


# A rate search with real engines (the reference's climb stopping where it misses, the
# submission's going on, brackets apart) is what every catalog serving task's expert
# config is graded by: test_catalog_tasks.py checks it there, with no engines started
# for it here.
