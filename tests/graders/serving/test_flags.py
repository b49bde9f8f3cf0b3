"""The platform's gate on a solver's engine flags, before vLLM's own checks."""

from __future__ import annotations

import pytest

from graders.serving.flags import NEVER, QUALITY, FlagPolicy, normalise, to_argv

POLICY = FlagPolicy(
    allowed=frozenset(
        {
            "max_num_seqs",
            "max_num_batched_tokens",
            "enable_chunked_prefill",
            "enable_prefix_caching",
            "speculative_config",
            "quantization",
            "compilation_config",
            "trust_remote_code",
        }
    ),
    quality=frozenset({"speculative_config"}),
    ranges={"max_num_seqs": (1, 64)},
)


def test_names_are_taken_with_dashes_or_underscores() -> None:
    flags, errors = POLICY.check({"max-num-seqs": 8, "--enable_prefix_caching": True})
    assert errors == []
    assert flags == {"max_num_seqs": 8, "enable_prefix_caching": True}
    assert normalise("--max-num-batched-tokens") == "max_num_batched_tokens"


@pytest.mark.parametrize(
    ("config", "flag", "message"),
    [
        ({"trust_remote_code": True}, "trust_remote_code", "never allowed"),
        ({"model": "/etc"}, "model", "never allowed"),
        ({"worker_cls": "x.y"}, "worker_cls", "never allowed"),
        ({"port": 80}, "port", "never allowed"),
        # Listed by the task, but compilation_config names cache dirs: never a solver's.
        ({"compilation_config": {"level": 3}}, "compilation_config", "never allowed"),
        ({"quantization": "fp8"}, "quantization", "changes what the model computes"),
        ({"block_size": 32}, "block_size", "is not one this task lets you set"),
        ({"max_num_seqs": 65}, "max_num_seqs", "between 1 and 64 for this task"),
        ({"max_num_seqs": True}, "max_num_seqs", "must be a number"),
        ({"max_num_batched_tokens": float("nan")}, "max_num_batched_tokens", "finite"),
        (
            {"speculative_config": {"method": "draft_model", "model": "/models/x"}},
            "speculative_config",
            "names a file, a model or code inside its value ('model')",
        ),
        ({"max_num_batched_tokens": "9" * 3000}, "max_num_batched_tokens", "longer than"),
        ({"max num seqs": 8}, "max num seqs", "is not a flag name"),
    ],
)
def test_a_flag_the_task_does_not_allow_is_named_and_refused(
    config: dict, flag: str, message: str
) -> None:
    flags, errors = POLICY.check(config)
    assert flags == {}
    assert [e.flag for e in errors] == [flag]
    assert message in errors[0].message, errors[0].message
    assert str(errors[0]).startswith(f"--{flag.replace('_', '-')}: ")


def test_a_flag_set_twice_is_refused() -> None:
    _, errors = POLICY.check({"max_num_seqs": 4, "max-num-seqs": 8})
    assert [str(e) for e in errors] == ["--max-num-seqs: is set twice"]


def test_an_allowed_quality_flag_with_plain_settings_passes() -> None:
    flags, errors = POLICY.check(
        {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}
    )
    assert errors == [] and "speculative_config" in flags


def test_no_flag_is_both_never_allowed_and_quality() -> None:
    assert not NEVER & QUALITY


def test_argv_is_what_vllms_command_line_takes() -> None:
    argv = to_argv(
        {
            "max_num_seqs": 8,
            "enable_prefix_caching": False,
            "enable_chunked_prefill": True,
            "speculative_config": {"num_speculative_tokens": 3, "method": "ngram"},
        }
    )
    assert argv == [
        "--max-num-seqs", "8",
        "--no-enable-prefix-caching",
        "--enable-chunked-prefill",
        "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}',
    ]  # fmt: skip


def test_a_flag_no_task_may_allow_is_refused_with_the_nearest_one_the_task_does() -> None:
    flags, errors = POLICY.check({"max_num_seq": 4, "override_generation_config": {"a": 1}})
    assert flags == {}
    assert [str(e) for e in errors] == [
        "--max-num-seq: is not an engine argument this platform lets solvers set "
        "(did you mean --max-num-seqs?)",
        "--override-generation-config: is not an engine argument this platform lets solvers set",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("--max-num-seqs=999", "may not start with '-'"),
        ('{"method": "ngram"}', "not as a JSON string"),
        ({"method": "ngram", "prompt_lookup_max": {"a": {"b": {"c": {"d": 1}}}}}, "deeper"),
        ({"method": "ngram", "num_speculative_tokens": 2**60}, "too large"),
        ({"method": "ngram", "when": __import__("datetime").date(1979, 5, 27)}, "a table"),
        ({"method": "ngram", "rejection_sample_method": "synthetic"}, "may set only"),
        ({"method": "eagle", "num_speculative_tokens": 2}, "model-free"),
    ],
)
def test_values_are_plain_data_and_speculation_is_model_free(value, message) -> None:
    _, errors = POLICY.check({"speculative_config": value})
    assert [e.flag for e in errors] == ["speculative_config"]
    assert message in errors[0].message, errors[0].message
