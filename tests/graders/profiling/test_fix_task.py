"""The re-profile form of a profiling task: its grading table, and its gradings as
the kind reports them, on the catalog's tasks in the real sandbox."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from graders.contract import GradingTableError
from graders.profiling.fix_task import FixTask
from graders.profiling.kind import ProfilingKind
from tasks.bundle import load_bundle
from tasks.catalog import bundle_message

CATALOG = Path(__file__).resolve().parents[3] / "reference_solutions"
SYNCS = CATALOG / "prof-fix-metric-syncs"
LOOP = CATALOG / "prof-fix-python-loop"
KIND = ProfilingKind()


def _task(folder: Path = SYNCS) -> tuple[dict[str, Any], dict[str, str]]:
    bundle = load_bundle(folder)
    return copy.deepcopy(bundle.manifest), {f.path: f.text for f in bundle.files}


def _error(manifest: dict[str, Any], files: dict[str, str]) -> GradingTableError:
    with pytest.raises(GradingTableError) as caught:
        KIND.parse_grading(manifest, files)
    return caught.value


def test_the_catalog_task_parses_to_its_settings():
    manifest, files = _task()
    task = KIND.parse_grading(manifest, files)
    assert isinstance(task, FixTask)
    assert (task.file_name, task.spec.module, task.spec.inputs_module) == (
        "train.py",
        "train.py",
        "inputs.py",
    )
    assert (task.spec.signal, task.spec.steps, task.max_ratio) == ("syncs", 3, 0.1)
    assert task.spec.tolerances["float32"] == (1e-5, 1e-5)
    assert task.spec.cuda is False


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda g: g.update(signal="flops"), "grading.signal"),
        (lambda g: g.update(max_ratio=1.5), "grading.max_ratio"),
        (lambda g: g.pop("max_ratio"), "grading.max_ratio"),
        (lambda g: g.update(program="missing.py"), "grading.program"),
        (lambda g: g.update(inputs="statement.md"), "grading.inputs"),
        (lambda g: g.update(entry="not a name"), "grading.entry"),
        (lambda g: g.update(steps=0), "grading.steps"),
        (lambda g: g.update(repeats=2), "grading.repeats"),
        (lambda g: g.update(timeout_s=10_000), "grading.timeout_s"),
        (lambda g: g.update(traces=["a.json"]), "grading.traces"),
        (lambda g: g.update(tolerances={"float8": {"atol": 1}}), "grading.tolerances.float8"),
    ],
)
def test_a_bad_setting_is_named(change, field):
    manifest, files = _task()
    change(manifest["grading"])
    error = _error(manifest, files)
    assert error.field == field and error.file == "task.toml", str(error)


def test_the_program_must_be_shown_to_solvers():
    manifest, files = _task()
    for entry in manifest["files"]:
        if entry["path"] == "train.py":
            entry["visibility"] = "hidden"
    assert "must be shown to solvers" in str(_error(manifest, files))


def test_solvers_see_how_they_are_measured_not_the_inputs():
    manifest, _ = _task()
    public = KIND.public_grading(manifest["grading"], {"statement.md", "train.py"})
    assert public == {
        "form": "reprofile",
        "program": "train.py",
        "entry": "step",
        "signal": "syncs",
        "steps": 3,
        "warmup": 1,
        "max_ratio": 0.1,
        "timeout_s": 120,
        "tolerances": {"float32": {"atol": 1e-5, "rtol": 1e-5}},
    }


def test_validation_grades_each_file_under_the_program_s_name():
    bundle = load_bundle(LOOP)
    candidates = KIND.validation_candidates(bundle.manifest, bundle.files)
    assert [(c.path, c.expected_verdict) for c in candidates] == [
        ("fix/pool.py", "accepted"),
        ("bad/chunks.py", "wrong_answer"),
        ("bad/collection_off.py", "integrity_violation"),
        ("bad/ignore_lengths.py", "wrong_answer"),
        ("(original program)", "wrong_answer"),
    ]
    assert all(list(c.submission_files) == ["pool.py"] for c in candidates)
    assert candidates[-1].submission_files["pool.py"] == (LOOP / "pool.py").read_text()
    assert not any(c.path == "(key script)" for c in candidates)


def _grade(folder: Path, path: str, as_name: str) -> dict[str, Any]:
    bundle = load_bundle(folder)
    text = {f.path: f.text for f in bundle.files}[path]
    return KIND.grade(bundle_message(bundle, {as_name: text}), backend_name="bwrap")


@pytest.fixture(scope="module")
def gradings() -> dict[str, dict[str, Any]]:
    """Real gradings, shared: each starts two sandboxes."""
    return {
        "fix": _grade(LOOP, "fix/pool.py", "pool.py"),
        "chunks": _grade(LOOP, "bad/chunks.py", "pool.py"),
        "crash": _grade(SYNCS, "train.py", "wrong_name.py"),
    }


def test_the_fix_is_accepted_with_its_figures(gradings):
    report = gradings["fix"]
    assert report["verdict"] == "accepted", report["reason"]
    metrics = KIND.metrics_of(report)
    ratio, before, after = (
        metrics[name] for name in ("signal_ratio", "reference_signal", "submission_signal")
    )
    assert ratio is not None and before is not None and after is not None
    assert ratio <= 0.1 and before > 10 * after
    assert metrics["strict_score"] is None, "an answer's figures are not measured here"
    assert "launches per call" in report["reason"]
    assert KIND.headline(report).startswith("launches x")
    assert any("signal:" in line for line in KIND.summary_lines(report))


def test_a_partial_fix_is_wrong_with_the_ratio_it_reached(gradings):
    report = gradings["chunks"]
    assert report["verdict"] == "wrong_answer"
    ratio = KIND.metrics_of(report)["signal_ratio"]
    assert ratio is not None and 0.1 < ratio < 0.5
    assert "not down to 0.04 times" in report["reason"]
    met, why = KIND.score_kind_rule(
        {"type": "signal_ratio", "at_most": 0.5}, report=report, on_target=True
    )
    assert met and "signal ratio" in why
    assert not KIND.score_kind_rule(
        {"type": "signal_ratio", "at_most": 0.1}, report=report, on_target=True
    )[0]


def test_what_a_solver_sees_of_a_grading(gradings):
    report = gradings["chunks"]
    public = KIND.public_report(report)
    text = json.dumps(public)
    assert public["signal"] == "launches" and public["signal_ratio"] == pytest.approx(
        report["reprofile"]["signal_ratio"]
    )
    assert (
        public["reference"]["launches_per_step"]
        == report["reprofile"]["reference"]["launches_per_step"]
    )
    assert public["submission"]["top_operators"], "the operators the changed program called"
    seed = report["reprofile"]["seed"]
    assert "seed" not in text and str(seed) not in text, "the secret seed stays private"
    assert "operator_notes" not in public


def test_a_submission_without_the_program_is_wrong_and_says_why(gradings):
    report = gradings["crash"]
    assert report["verdict"] == "wrong_answer"
    assert report["reason"] == "no train.py in the submission (it has wrong_name.py)"


def test_kind_rule_parameters_are_checked():
    assert KIND.check_kind_rule({"type": "signal_ratio", "at_most": 0}) == [
        ("at_most", "must be a share above 0")
    ]
    assert KIND.check_kind_rule({"type": "signal_ratio", "at_most": 0.5}) == []
