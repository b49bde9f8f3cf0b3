"""A real vLLM engine (CPU build, tiny model) in the bubblewrap sandbox: started with the
task's arguments, reachable only from inside its own network namespace, driven by
vLLM's own benchmark client, and gone without a trace when closed."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graders.serving.engine import Engine
from graders.serving.grading import length_prompts, workload_args
from graders.serving.spec import ServingSpec
from sandboxes import get_backend
from tests.graders.serving.test_spec import FILES, MANIFEST

# A real engine under load measures the whole host: these run alone (see scripts/test.sh).
pytestmark = [pytest.mark.slow, pytest.mark.serial]

ARGS = ["--dtype", "bfloat16", "--max-model-len", "1024", "--max-num-seqs", "8", "--enforce-eager"]
WORKLOAD = [
    "--dataset-name", "random", "--random-input-len", "64", "--random-output-len", "16",
    "--num-prompts", "12", "--request-rate", "6", "--seed", "7", "--ignore-eos",
    "--goodput", "ttft:2000", "tpot:500",
    "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
]  # fmt: skip
KV_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}
# A length-distribution workload: every row once (as many requests as rows).
LENGTHS = [(40, 8), (120, 4), (64, 16), (200, 6), (32, 12), (90, 10)]


def _lengths_run() -> tuple[list[str], dict[str, Any] | None]:
    """The client's arguments and files for the LENGTHS workload, as a grading builds them."""
    manifest = copy.deepcopy(MANIFEST)
    manifest["grading"]["workload"] = {
        "dataset": "lengths",
        "lengths": "workload/lengths.jsonl",
        "rate": 6,
        "requests": len(LENGTHS),
        "seed": 3,
    }
    text = "\n".join(json.dumps({"input": i, "output": o}) for i, o in LENGTHS)
    spec = ServingSpec.from_manifest(manifest, {**FILES, "workload/lengths.jsonl": text})
    argv = workload_args(spec.workload, spec, seed=3, requests=len(LENGTHS))
    return argv, length_prompts(spec.workload, seed=3, requests=len(LENGTHS))


def _engine_processes() -> list[str]:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in listing.stdout.splitlines() if "vllm.entrypoints" in line]


@pytest.fixture(scope="module")
def served(model_dir: Path) -> Iterator[dict[str, Any]]:
    engine = Engine("reference", get_backend("bwrap"), model_dir, env=KV_ENV)
    engine.open()
    facts: dict[str, Any] = {}
    try:
        facts["start"] = engine.start(ARGS, timeout_s=300)
        facts["during"] = _engine_processes()
        if facts["start"].ready:
            facts["bench"] = engine.bench(WORKLOAD, timeout_s=300)
            argv, lengths = _lengths_run()
            facts["lengths"] = engine.bench(argv, timeout_s=300, lengths=lengths)
    finally:
        facts["result"] = engine.close()
        facts["after"] = _engine_processes()
    yield facts


def test_the_engine_starts_in_the_sandbox(served: dict[str, Any]) -> None:
    start = served["start"]
    assert start.ready, start.log
    assert 0 < start.ready_s < 300
    assert served["during"], "the engine's server process was not running"


def test_vllms_client_measures_the_workload(served: dict[str, Any]) -> None:
    bench = served["bench"]
    assert bench["engine_alive"] is True
    result = bench["result"]
    assert result["completed"] == 12 and result["failed"] == 0
    assert result["total_output_tokens"] == 12 * 16  # ignore_eos: every token asked for
    assert result["request_throughput"] > 0
    assert 0 < result["request_goodput"] <= result["request_throughput"]
    for metric in ("ttft", "tpot", "itl", "e2el"):
        assert 0 < result[f"median_{metric}_ms"] <= result[f"p99_{metric}_ms"]


def test_a_length_distribution_workload_sends_the_files_lengths(served: dict[str, Any]) -> None:
    """Each row once, its prompt exactly its input length as the engine counts it."""
    bench = served["lengths"]
    assert bench["engine_alive"] is True, bench.get("log")
    result = bench["result"]
    assert result["completed"] == len(LENGTHS) and result["failed"] == 0
    assert result["total_input_tokens"] == sum(i for i, _ in LENGTHS)
    assert result["total_output_tokens"] == sum(o for _, o in LENGTHS)  # ignore_eos


def test_nothing_of_the_engine_is_left_after_close(served: dict[str, Any]) -> None:
    assert served["after"] == []
    assert served["result"] is not None and served["result"].limit_exceeded is None


def test_an_engine_that_cannot_start_says_why(model_dir: Path) -> None:
    engine = Engine("submission", get_backend("bwrap"), model_dir, env=KV_ENV)
    engine.open()
    try:
        # A context longer than the model's positions: vLLM refuses it at start.
        start = engine.start([*ARGS, "--max-model-len", "100000"], timeout_s=300)
    finally:
        engine.close()
    assert not start.ready
    assert start.exit_code not in (None, 0)
    assert "max_model_len" in start.log or "max-model-len" in start.log
    assert _engine_processes() == []
