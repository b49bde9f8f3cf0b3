"""vLLM's own parser and config checks on a solver's config, run in the serving
environment against a real (tiny) model: what they accept, and each way they refuse,
named by flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graders.serving.check import ConfigCheck, check_config, check_configs
from graders.serving.flags import FlagPolicy
from graders.serving.tinymodel import Recipe

ALLOWED = frozenset(
    {
        "max_num_seqs",
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "max_model_len",
        "tensor_parallel_size",
        "block_size",
    }
)
FIXED = {"dtype": "bfloat16", "max_model_len": 1024, "enforce_eager": True}
KV_BYTES = 1 << 30


def _check(model_dir: Path, config: dict[str, Any], fixed: dict[str, Any] | None = None):
    return check_config(
        config,
        FlagPolicy(allowed=ALLOWED),
        fixed=FIXED if fixed is None else fixed,
        model_dir=model_dir,
        kv_cache_bytes=KV_BYTES,
    )


def test_a_good_config_resolves_to_the_engine_vllm_would_build(model_dir: Path) -> None:
    result = _check(model_dir, {"max_num_seqs": 4, "enable_prefix_caching": False})
    assert result.ok, result.errors
    engine = result.engine
    assert engine["max_num_seqs"] == 4
    assert engine["enable_prefix_caching"] is False
    assert engine["enable_chunked_prefill"] is True  # vLLM's default on this engine
    assert engine["max_model_len"] == 1024
    # 4 layers x 2 KV heads x 64 dims x 2 (K and V) x 2 bytes (bf16).
    assert engine["kv_bytes_per_token"] == 2048
    assert engine["kv_cache_tokens"] == KV_BYTES // 2048
    # bf16: two bytes a weight, and the recipe's count of them (2.6 M).
    assert abs(engine["weights_bytes"] - 2 * Recipe().parameters()) < 100_000


REFUSED = [
    ({"max_num_seqs": "many"}, "max_num_seqs", "invalid int value: 'many'"),
    ({"max_num_seqs": 0}, "max_num_seqs", "greater than or equal to 1"),
    ({"enable_prefix_caching": "yes"}, "enable_prefix_caching", "must be true or false"),
    (
        {"max_num_batched_tokens": 100, "enable_chunked_prefill": False},
        "max_num_batched_tokens",
        "is smaller than max_model_len",
    ),
    ({"tensor_parallel_size": 2}, "tensor_parallel_size", "needs 2 devices"),
]


@pytest.fixture(scope="module")
def refused(model_dir: Path) -> list[ConfigCheck]:
    """Every refused config, checked in one run of vLLM's checks."""
    return check_configs(
        [config for config, _, _ in REFUSED],
        FlagPolicy(allowed=ALLOWED),
        fixed=FIXED,
        model_dir=model_dir,
        kv_cache_bytes=KV_BYTES,
    )


@pytest.mark.parametrize("case", range(len(REFUSED)), ids=[flag for _, flag, _ in REFUSED])
def test_vllms_checks_name_the_flag_they_refuse(refused: list[ConfigCheck], case: int) -> None:
    _, flag, message = REFUSED[case]
    result = refused[case]
    assert not result.ok
    assert any(e.flag == flag and message in e.message for e in result.errors), result.errors


def test_a_context_longer_than_the_kv_cache_holds_is_refused(model_dir: Path) -> None:
    result = check_config(
        {"max_model_len": 4096},
        FlagPolicy(allowed=ALLOWED),
        fixed={"dtype": "bfloat16", "enforce_eager": True},
        model_dir=model_dir,
        kv_cache_bytes=1_000_000,
    )
    assert [e.flag for e in result.errors] == ["max_model_len"]
    assert "needs 8388608 bytes of KV cache" in result.errors[0].message


def test_the_platforms_gate_answers_before_vllm_is_asked(model_dir: Path) -> None:
    result = _check(model_dir, {"trust_remote_code": True, "max_num_seqs": 4})
    assert [e.flag for e in result.errors] == ["trust_remote_code"]
    assert result.engine == {}


def test_every_flag_the_platform_lets_solvers_set_is_one_of_vllms() -> None:
    import subprocess

    from graders.serving.engine import ROOT, serving_python
    from graders.serving.flags import SETTABLE

    code = (
        "from graders.serving.engine_check import _parser; "
        "print(' '.join(a.dest for a in _parser()._actions if a.option_strings))"
    )
    done = subprocess.run(
        [str(serving_python()), "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        capture_output=True,
        text=True,
        check=True,
    )
    arguments = set(done.stdout.split("\n")[-2].split())
    assert arguments >= SETTABLE, sorted(SETTABLE - arguments)
