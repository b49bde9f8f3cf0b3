"""The serving kind's contract: what solvers see of a task and of a report, the report
of a config refused before anything starts (a real grading's), metrics and rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from graders.contract import TaskFileInfo
from graders.serving.kind import ServingKind
from tests import recorded
from tests.graders.serving.test_spec import FILES, MANIFEST

KIND = ServingKind()


def _message(files: dict[str, str]) -> dict[str, Any]:
    return {"manifest": copy.deepcopy(MANIFEST), "task_files": FILES, "submission_files": files}


def test_solvers_see_how_they_are_measured_but_not_the_reference() -> None:
    public = KIND.public_grading(MANIFEST["grading"], shown_paths=[])
    assert "reference" not in public
    assert public["slo"] == MANIFEST["grading"]["slo"]
    assert public["allowed"] == MANIFEST["grading"]["allowed"]


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"config.yaml": "x: 1"}, "no engine.toml in the submission (config.yaml)"),
        ({"engine.toml": "max_num_seqs = = 2"}, "engine.toml: config: is not TOML"),
        ({"engine.toml": "# nothing\n"}, "engine.toml: config: sets no flag"),
    ],
)
def test_a_submission_that_is_not_a_config_is_refused_before_anything_runs(
    files: dict[str, str], reason: str
) -> None:
    report = KIND.grade(_message(files), backend_name="bwrap")
    assert report["verdict"] == "compile_error"
    assert reason in report["reason"]


@pytest.fixture(scope="module")
def refused() -> dict[str, Any]:
    """A real grading of a config with a flag the task does not allow (vLLM checks the
    reference's; no engine starts)."""
    files = {"engine.toml": "max_num_seqs = 8\nblock_size = 16\n"}
    return KIND.grade(_message(files), backend_name="bwrap")


def test_a_refused_flag_is_named_in_the_report_and_to_the_solver(refused: dict[str, Any]) -> None:
    assert refused["verdict"] == "compile_error", refused["reason"]
    assert "--block-size: is not one this task lets you set" in refused["reason"]
    public = KIND.public_report(refused)
    assert public["config_errors"] == refused["serving"]["config_errors"]
    assert public["submission"]["flags"] == {"max_num_seqs": 8}  # the flags that passed
    # The reference's flags are the author's: never shown.
    assert "flags" not in public["reference"]
    assert "max_num_batched_tokens" not in str(public["reference"])


def test_a_refused_config_has_no_figures_and_fails_the_valid_config_rule(
    refused: dict[str, Any],
) -> None:
    assert set(KIND.metrics_of(refused).values()) == {None}
    ok, why = KIND.score_rule({"type": "valid_config"}, report=refused, on_target=True)
    assert not ok and "compile_error" in why
    ok, _ = KIND.score_rule(
        {"type": "goodput_ratio", "at_least": 1.0}, report=refused, on_target=True
    )
    assert not ok
    assert any(line.startswith("config:      --block-size") for line in KIND.summary_lines(refused))


@pytest.mark.parametrize(
    ("rule", "problems"),
    [
        ({"type": "goodput_ratio", "at_least": 1.2}, []),
        ({"type": "goodput_ratio", "at_least": 0}, ["at_least"]),
        ({"type": "slo_attainment", "at_least": 1.5}, ["at_least"]),
        ({"type": "goodput_ratio", "at_least": 1.1, "significant": "yes"}, ["significant"]),
    ],
)
def test_rule_parameters_are_checked(rule: dict[str, Any], problems: list[str]) -> None:
    assert [name for name, _ in KIND.check_kind_rule(rule)] == problems


def test_validation_grades_the_expert_to_beat_the_reference_and_the_reference_itself() -> None:
    files = [
        TaskFileInfo("reference/engine.toml", "other", "", FILES["reference/engine.toml"]),
        TaskFileInfo("solution/engine.toml", "solution", "", "max_num_batched_tokens = 512\n"),
        TaskFileInfo("bad/bogus.toml", "negative", "compile_error", "block_size = 16\n"),
    ]
    candidates = KIND.validation_candidates(MANIFEST, files)
    by_path = {c.path: c for c in candidates}
    assert [c.path for c in candidates] == [
        "solution/engine.toml",
        "bad/bogus.toml",
        "(reference config)",
    ]
    expert = by_path["solution/engine.toml"]
    assert expert.expected_verdict == "accepted"
    assert expert.overrides == {"must_beat_reference": True}
    assert expert.submission_files == {"engine.toml": "max_num_batched_tokens = 512\n"}
    assert by_path["bad/bogus.toml"].expected_verdict == "compile_error"
    reference = by_path["(reference config)"]
    assert reference.expected_verdict == "accepted"
    assert reference.overrides == {"first_rate_only": True}
    assert reference.submission_files == {"engine.toml": FILES["reference/engine.toml"]}


def test_a_rate_search_report_scores_by_the_rate_ratio() -> None:
    """A real grading of the catalog's shared-prefix task (``tests/recorded.py``)."""
    report = recorded.report("shared-prefix-solution")
    serving = report["serving"]
    assert serving["objective"] == "max_rate"
    metrics = KIND.metrics_of(report)
    assert metrics["rate_ratio"] == serving["rate_ratio"] and metrics["goodput_ratio"] is None
    assert metrics["max_rate"] == serving["submission"]["max_rate"]
    assert KIND.headline(report) == f"rate x{serving['rate_ratio']:.3g}"
    ratio = serving["rate_ratio"]
    below = {"type": "rate_ratio", "at_least": ratio * 0.99, "significant": True}
    above = {"type": "rate_ratio", "at_least": ratio * 1.01}
    assert KIND.score_rule(below, report=report, on_target=True)[0] is serving["significant"]
    assert not KIND.score_rule(above, report=report, on_target=True)[0]
    lines = KIND.summary_lines(report)
    assert lines[0].startswith("rate:") and lines[1].startswith("max rate:")
    # What the solver sees: every rate either side climbed, never the reference's flags.
    public = KIND.public_report(report)
    assert [p["rate"] for p in public["submission"]["points"]] == [
        p["rate"] for p in serving["submission"]["points"]
    ]
    assert "flags" not in public["reference"] and "engine" not in public["reference"]
