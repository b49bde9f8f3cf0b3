"""The task-kind registry, the worker's dispatch by kind, and the kernel kind's contract."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from graders import registry, worker
from graders.contract import (
    CPU_QUEUE,
    RETRY,
    GradingTableError,
)
from graders.kernel.kind import KernelKind
from graders.verdicts import SUBMISSION_VERDICTS, Verdict
from tests import recorded
from tests.graders.text_answer import TextAnswer

CATALOG = Path(__file__).resolve().parents[2] / "reference_solutions"


def message(kind: str, answer: str) -> dict[str, Any]:
    return {
        "manifest": {"kind": kind, "grading": {"key": "key.txt"}},
        "task_files": {"key.txt": "42\n"},
        "submission_files": {"answer.txt": answer},
    }


def test_the_registry_is_the_list_of_kinds_and_names_what_it_lacks():
    assert "kernel" in registry.kinds()
    assert isinstance(registry.get("kernel"), KernelKind)
    assert registry.get("kernel") is registry.get("kernel")  # one grader per kind
    with pytest.raises(registry.UnknownKind, match="no grader is registered for 'haiku'"):
        registry.get("haiku")


def test_a_kind_registered_from_outside_is_graded_through_the_worker(text_answer):
    assert "text-answer" in registry.kinds()

    right = worker.grade_message(message("text-answer", "42"), backend_name="bwrap")
    wrong = worker.grade_message(message("text-answer", "4\x002"), backend_name="bwrap")

    assert right["verdict"] == "accepted"
    assert wrong["verdict"] == "wrong_answer"
    assert "\x00" not in wrong["reason"]  # what the solver wrote, made storable
    public = text_answer.public_report(wrong)
    assert "operator_notes" not in public and "42" not in str(public)
    assert set(public) == {"verdict", "reason", "integrity", "hardware", "logs", "duration_s"}


def test_the_worker_answers_for_a_kind_it_has_no_grader_for(text_answer):
    registry.unregister("text-answer")
    report = worker.grade_message(message("text-answer", "42"), backend_name="bwrap")
    assert report["verdict"] == Verdict.INTERNAL_ERROR
    assert "no grader for text-answer tasks" in report["reason"]
    assert worker.grade_message({"no": "manifest"}, backend_name="bwrap")["verdict"] == (
        "internal_error"
    )


def test_a_grader_that_raises_is_the_platforms_failure(text_answer, monkeypatch):
    monkeypatch.setattr(TextAnswer, "grade", lambda self, message, backend_name: 1 / 0)
    report = worker.grade_message(message("text-answer", "42"), backend_name="bwrap")
    assert report["verdict"] == "internal_error"
    assert "the text-answer grader failed: ZeroDivisionError" in report["reason"]


def test_one_queue_routing_for_every_kind(text_answer):
    pools = ["h100"]
    assert registry.grading_queue("kernel", "cpu", pools) == CPU_QUEUE
    assert registry.grading_queue("kernel", "h100", pools) == "grading.gpu.h100"
    # No pool for the hardware: the CPU pool checks correctness.
    assert registry.grading_queue("kernel", "b200", pools) == CPU_QUEUE
    assert registry.grading_queue("text-answer", "h100", pools) == "grading.gpu.h100"
    assert registry.grading_queue("no-such-kind", "h100", pools) == CPU_QUEUE


def test_one_retry_policy():
    assert [RETRY.should_retry(n) for n in (1, 2, 3)] == [True, True, False]
    assert [RETRY.delay_s(n) for n in (1, 2)] == [10.0, 20.0]


def test_the_verdicts_a_submission_can_earn_exclude_the_platforms_and_the_tasks():
    assert "task_error" not in SUBMISSION_VERDICTS and "internal_error" not in SUBMISSION_VERDICTS
    assert set(SUBMISSION_VERDICTS) | {"task_error", "internal_error"} == set(Verdict.values())


# -- the kernel kind -------------------------------------------------------------------


def catalog_bundle(slug: str) -> tuple[dict[str, Any], dict[str, str]]:
    folder = CATALOG / slug
    manifest = tomllib.loads((folder / "task.toml").read_text())
    files = {entry["path"]: (folder / entry["path"]).read_text() for entry in manifest["files"]}
    return manifest, files


def test_kernel_grading_errors_name_the_file_and_the_field():
    manifest, files = catalog_bundle("cpu-causal-softmax")
    kernel = registry.get("kernel")
    assert kernel.parse_grading(manifest, files) is not None

    manifest["grading"]["trials"] = "many"
    with pytest.raises(GradingTableError) as caught:
        kernel.parse_grading(manifest, files)
    assert (caught.value.file, caught.value.field) == ("task.toml", "grading.trials")

    manifest, files = catalog_bundle("cpu-causal-softmax")
    manifest["grading"]["shapes"][0]["hosts"] = ["tpu"]
    with pytest.raises(GradingTableError) as caught:
        kernel.parse_grading(manifest, files)
    assert caught.value.field == "grading.shapes[0].hosts", caught.value
    assert "tpu" in caught.value.message


def test_the_kernel_public_report_is_an_allow_list_of_a_real_report():
    report = recorded.report(recorded.TASK_ERROR)
    assert report["operator_notes"]  # the reference's traceback: hidden
    public = registry.get("kernel").public_report(report)
    assert "operator_notes" not in public and "artifacts" not in public
    assert report["operator_notes"] not in str(public)
    accepted = registry.get("kernel").public_report(recorded.report(recorded.ACCEPTED))
    assert accepted["timing"]["speedup"] == accepted["speedup"]
    assert "samples_s" not in accepted["timing"]["reference"]
    assert all("seed" not in trial and "message" not in trial for trial in accepted["correctness"])


def test_kernel_metrics_are_read_by_name_from_a_real_report():
    kernel = registry.get("kernel")
    report = recorded.report(recorded.ACCEPTED)
    values = kernel.metric_values(report)
    assert set(values) == {metric.name for metric in kernel.metrics}
    assert values["speedup"] == report["speedup"]
    assert values["reference_median_s"] == report["timing"]["reference"]["median_s"]
    assert {m.name: m.direction for m in kernel.metrics}["submission_median_s"] == "lower"
    assert kernel.metric_values(recorded.report(recorded.EMPTY))["speedup"] is None


def test_rule_types_are_the_common_ones_and_the_kinds_own():
    names = [rule.name for rule in registry.get("kernel").rule_types()]
    assert names == ["verdict", "integrity", "speedup"]
    met, detail = registry.get("kernel").score_rule(
        {"type": "matched"}, report=recorded.report(recorded.ACCEPTED), on_target=True
    )
    assert not met and "unknown rule type 'matched' for kernel tasks" in detail


def test_a_deployment_adds_kinds_in_the_environment():
    assert registry.from_environment("") == {}
    assert registry.from_environment(" quiz=kinds.quiz:Quiz , essay=kinds.essay:Essay") == {
        "quiz": "kinds.quiz:Quiz",
        "essay": "kinds.essay:Essay",
    }
    for bad in ("quiz", "Quiz=kinds.quiz:Quiz", "quiz=kinds.quiz"):
        with pytest.raises(ValueError, match="is not name=module:Class"):
            registry.from_environment(bad)


def test_a_kind_from_the_environment_is_registered_in_a_fresh_process():
    import os
    import subprocess
    import sys

    code = (
        "from graders import registry; print(registry.kinds()); "
        "print(registry.get('text-answer').label); registry.get('mislabelled')"
    )
    env = dict(
        os.environ,
        BENCHWRIGHT_TASK_KINDS=(
            "text-answer=tests.graders.text_answer:TextAnswer,"
            "mislabelled=tests.graders.text_answer:TextAnswer"
        ),
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=CATALOG.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()
    registered = "('kernel', 'debugging', 'profiling', 'serving', 'text-answer', 'mislabelled')"
    assert lines[:2] == [registered, "Text answer"], done.stderr
    assert "is the 'text-answer' kind, not 'mislabelled'" in done.stderr
