"""The check an author's reference config gets from the grading tab
(``check.check_draft_config``, run by the ``tasks.check_engine_config`` job): the
same gates as a grading's, answered as plain data, and a platform that cannot run
vLLM's checks said so rather than blamed on the config. vLLM accepting and refusing
a saved reference through the real worker is tests/browser/test_serving_authoring.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.serving import check, models
from graders.serving.check import check_draft_config
from graders.serving.kind import ServingKind

PATH = "reference/engine.toml"


def manifest(**changes) -> dict:
    grading = {**ServingKind().default_grading(), **changes}
    return {"slug": "draft", "kind": "serving", "hardware": "cpu", "grading": grading}


def test_a_table_the_grader_cannot_read_is_the_answer_not_a_crash() -> None:
    answer = check_draft_config(manifest(runs=1), {PATH: "max_num_seqs = 4"}, PATH)
    assert answer["errors"] == [
        {"flag": "config", "message": "task.toml: grading.runs: must lie in [3, 20]"}
    ]


def test_the_platforms_gate_answers_before_vllm_is_asked(monkeypatch) -> None:
    def never(*args, **kwargs):
        raise AssertionError("vLLM's checks ran on a config the gate refuses")

    monkeypatch.setattr(check, "_run_engine_check", never)
    monkeypatch.setattr(models, "tiny_model", lambda recipe: Path("/nonexistent"))
    answer = check_draft_config(manifest(), {PATH: "block_size = 16"}, PATH)
    (error,) = answer["errors"]
    assert error["flag"] == "block_size" and "is not one this task lets you set" in error["message"]


def test_without_the_serving_environment_the_check_is_unavailable(monkeypatch, tmp_path) -> None:
    missing = tmp_path / "no-venv" / "bin" / "python"
    monkeypatch.setattr(check, "serving_python", lambda: missing)
    monkeypatch.setattr(models, "tiny_model", lambda recipe: tmp_path)
    answer = check_draft_config(manifest(), {PATH: "max_num_seqs = 4"}, PATH)
    assert "no serving environment" in answer["unavailable"]


@pytest.mark.parametrize("text", ["max_num_seqs = [", ""])
def test_a_file_that_is_no_config_is_named(text) -> None:
    (error,) = check_draft_config(manifest(), {PATH: text}, PATH)["errors"]
    assert error["message"].startswith(f"{PATH}: config:")
