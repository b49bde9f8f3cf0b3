"""A serving task's [grading] table: what it holds once parsed, and each mistake an
author can make, named by file and field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from graders.contract import GradingTableError
from graders.serving.spec import ServingSpec
from graders.serving.tinymodel import Recipe

MANIFEST: dict[str, Any] = {
    "slug": "serve-long-prompts",
    "kind": "serving",
    "hardware": "cpu",
    "grading": {
        "engine": "vllm",
        "engine_version": "0.32.0",
        "submission": "engine.toml",
        "reference": "reference/engine.toml",
        "allowed": ["max-num-batched-tokens", "enable_chunked_prefill", "max_num_seqs"],
        "fixed": {"dtype": "bfloat16", "max_model_len": 2048, "enforce_eager": True},
        "kv_cache_gib": 1,
        "runs": 3,
        "ranges": {"max_num_seqs": [1, 64]},
        "model": {"tiny": {"seed": 3, "num_hidden_layers": 2}},
        "workload": {
            "dataset": "random",
            "input_len": 512,
            "output_len": 16,
            "range_ratio": 0.25,
            "arrival": "gamma",
            "burstiness": 0.5,
            "rate": 4,
            "requests": 40,
        },
        "slo": {"ttft_ms": 800, "tpot_ms": 60, "attainment": 0.9},
    },
}
FILES = {"reference/engine.toml": "max_num_batched_tokens = 8192\n"}


def parse(manifest: dict[str, Any], files: dict[str, str] | None = None) -> ServingSpec:
    return ServingSpec.from_manifest(manifest, FILES if files is None else files)


def test_a_table_parses_to_its_settings() -> None:
    spec = parse(MANIFEST)
    assert spec.engine == "vllm" and spec.engine_version == "0.32.0"
    assert spec.policy.allowed == {
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "max_num_seqs",
    }
    assert spec.policy.ranges == {"max_num_seqs": (1.0, 64.0)}
    assert spec.fixed == {"dtype": "bfloat16", "max_model_len": 2048, "enforce_eager": True}
    assert spec.recipe == Recipe(seed=3, num_hidden_layers=2) and spec.model_path is None
    assert spec.workload.arrival == "gamma" and spec.workload.burstiness == 0.5
    assert spec.workload.ignore_eos is True and spec.workload.warmup == 4
    assert spec.slo.goodput_args() == ["ttft:800", "tpot:60"]
    assert spec.objective == "goodput" and spec.rates == (4.0,)


def _with(path: str, value: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(MANIFEST)
    *parents, last = path.split(".")
    table = manifest
    for key in parents:
        table = table[key]
    if value is None:
        del table[last]
    else:
        table[last] = value
    return manifest


@pytest.mark.parametrize(
    ("path", "value", "field", "message"),
    [
        ("grading.engine", "sglang", "grading.engine", "must be one of: vllm"),
        ("grading.engine_version", "0.31.0", "grading.engine_version", "runs vllm 0.32.0"),
        ("grading.allowed", ["trust_remote_code"], "grading.allowed", "no task may let"),
        ("grading.allowed", [], "grading.allowed", "at least one flag"),
        ("grading.quality", ["quantization"], "grading.quality", "is not in allowed"),
        ("grading.fixed", {"model": "/x"}, "grading.fixed.model", "set by the platform"),
        ("grading.ranges", {"block_size": [1, 2]}, "grading.ranges.block_size", "not in allowed"),
        ("grading.ranges", {"max_num_seqs": [9, 2]}, "grading.ranges.max_num_seqs", "low first"),
        ("grading.runs", 2, "grading.runs", "must lie in [3, 20]"),
        ("grading.reference", "missing.toml", "grading.reference", "not a file of the bundle"),
        ("grading.model", {"path": "/models/x"}, "grading.model.path", "builds a tiny model"),
        ("grading.model", {}, "grading.model", "exactly one of tiny"),
        ("grading.model.tiny", {"layers": 2}, "grading.model.tiny.layers", "unknown"),
        (
            "grading.model.tiny",
            {"hidden_size": 102},
            "grading.model.tiny.num_attention_heads",
            "divide",
        ),
        (
            "grading.model.tiny",
            {"hidden_size": 4096, "intermediate_size": 11008},
            "grading.model.tiny",
            "is not tiny",
        ),
        ("grading.workload.dataset", "sharegpt", "grading.workload.dataset", "must be one of"),
        ("grading.workload.arrival", "poisson", "grading.workload.burstiness", "burstiness 1"),
        ("grading.workload.rate", None, "grading.workload.rate", "is required"),
        ("grading.workload.requests", 10**6, "grading.workload.requests", "must lie in"),
        ("grading.workload.lengths", "x.jsonl", "grading.workload.lengths", 'dataset = "lengths"'),
        ("grading.workload.colour", "red", "grading.workload.colour", "unknown key"),
        ("grading.slo", {"attainment": 0.9}, "grading.slo", "at least one of"),
        ("grading.slo.ttft_ms", -1, "grading.slo.ttft_ms", "must lie in"),
        (
            "grading.objective",
            {"kind": "max_rate", "rates": [4, 2]},
            "grading.objective.rates",
            "increasing",
        ),
        ("grading.objective", {"kind": "fastest"}, "grading.objective.kind", "must be one of"),
        ("grading.colour", "red", "grading.colour", "unknown key"),
    ],
)
def test_each_mistake_is_named(path: str, value: Any, field: str, message: str) -> None:
    with pytest.raises(GradingTableError) as caught:
        parse(_with(path, value))
    assert caught.value.field == field
    assert message in caught.value.message, caught.value.message


def test_a_length_distribution_file_is_checked_line_by_line() -> None:
    manifest = _with("grading.workload.dataset", "lengths")
    manifest["grading"]["workload"]["lengths"] = "workload/lengths.jsonl"
    files = {**FILES, "workload/lengths.jsonl": '{"input": 120, "output": 30}\n{"input": 0}\n'}
    with pytest.raises(GradingTableError) as caught:
        parse(manifest, files)
    assert (caught.value.file, caught.value.field) == ("workload/lengths.jsonl", "line 2")
    files["workload/lengths.jsonl"] = '{"input": 120, "output": 30}\n{"input": 900, "output": 8}\n'
    workload = parse(manifest, files).workload
    assert workload.lengths == "workload/lengths.jsonl"
    assert workload.length_rows == ((120, 30), (900, 8))
    files["workload/lengths.jsonl"] = '{"input": 1, "output": 40000}\n'
    with pytest.raises(GradingTableError) as caught:
        parse(manifest, files)
    assert caught.value.field == "line 1" and "at most" in caught.value.message


def test_a_reference_config_that_is_not_toml_names_its_file() -> None:
    with pytest.raises(GradingTableError) as caught:
        parse(MANIFEST, {"reference/engine.toml": "max_num_seqs = = 3"})
    assert caught.value.file == "reference/engine.toml"
    assert "is not TOML" in caught.value.message


def test_a_search_over_rates_keeps_its_rates() -> None:
    spec = parse(_with("grading.objective", {"kind": "max_rate", "rates": [1, 2, 4.5]}))
    assert spec.objective == "max_rate" and spec.rates == (1.0, 2.0, 4.5)


def test_a_gpu_task_names_a_model_on_the_pool() -> None:
    manifest = _with("grading.model", {"path": "/models/llama-3.1-8b"})
    manifest["hardware"] = "h100"
    spec = parse(manifest)
    assert spec.recipe is None and spec.model_path == "/models/llama-3.1-8b"
