"""The profiling kind on the catalog's ``answer`` tasks: what solvers are shown of the
grading table and of a report, the metrics, summary and headline of real reports,
the kind's rubric rules, validation's candidates, and the key script run for real
in the bubblewrap sandbox."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from graders.contract import TaskFileInfo
from graders.profiling import grading
from graders.profiling.kind import KEY_CHECK, PUBLIC_FIELD_KEYS, ProfilingKind
from graders.profiling.spec import ProfilingSpec
from graders.worker import ready_backend
from tasks.bundle import Bundle, load_bundle
from tasks.catalog import bundle_message

CATALOG = Path(__file__).resolve().parents[3] / "reference_solutions"
ANSWER_TASKS = sorted(p.parent.name for p in CATALOG.glob("prof-*/key.json"))
HOST_SYNC = "prof-host-sync"
RANKS = "prof-rank-imbalance"
KIND = ProfilingKind()


@cache
def _bundle(name: str) -> Bundle:
    return load_bundle(CATALOG / name)


def _files(name: str) -> dict[str, str]:
    return {f.path: f.text for f in _bundle(name).files}


@cache
def _spec(name: str) -> ProfilingSpec:
    return ProfilingSpec.from_manifest(_bundle(name).manifest, _files(name))


def _answers(name: str) -> list[str]:
    """The bundle's answers: the expert's and every negative's."""
    return [f.path for f in _bundle(name).files if f.role in ("solution", "negative")]


@cache
def _report(name: str, path: str) -> dict[str, Any]:
    text = _files(name)[path]
    return grading.grade_answer(_spec(name), {"answer.json": text})


def _shown(name: str) -> set[str]:
    return {e["path"] for e in _bundle(name).manifest["files"] if e["visibility"] == "prompt"}


def _hidden(name: str) -> set[str]:
    return {e["path"] for e in _bundle(name).manifest["files"] if e["visibility"] == "hidden"}


def _key(name: str) -> dict[str, Any]:
    return json.loads(_files(name)["key.json"])


def _key_values(key: Mapping[str, Any]) -> list[Any]:
    values: list[Any] = []
    for value in key.values():
        values.extend(value if isinstance(value, list) else [value])
    return values


def _pattern(value: Any) -> re.Pattern[str] | None:
    """How a key value would appear in text, as a token; None for values too plain
    to tell apart (small whole numbers such as 0, 1 or 4.0 occur everywhere)."""
    if isinstance(value, str):
        return re.compile(r"(?<![\w:/])" + re.escape(value) + r"(?!\w)")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if float(value).is_integer() and abs(value) < 10:
        return None
    forms = {repr(value), str(value), f"{value:g}"}
    return re.compile(r"(?<![\d.])(" + "|".join(re.escape(f) for f in forms) + r")(?!\d)")


def _leaked(key: Mapping[str, Any], answer_text: str, shown_text: str) -> list[Any]:
    """The key's values that the shown text holds although the answer does not."""
    leaked = []
    for value in _key_values(key):
        pattern = _pattern(value)
        if pattern is None or pattern.search(answer_text):
            continue
        if pattern.search(shown_text):
            leaked.append(value)
    return leaked


# -- public_grading ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_public_grading_shows_only_the_settings_solvers_may_see(name):
    table = _bundle(name).manifest["grading"]
    public = KIND.public_grading(table, _shown(name))
    assert set(public) == {"form", "traces", "schema", "answer_file", "fields"}
    assert public["traces"] == table["traces"]
    assert (public["form"], public["schema"], public["answer_file"]) == (
        "answer",
        "answer.schema.json",
        "answer.json",
    )
    assert set(public["fields"]) == set(table["fields"])
    for field, rule in public["fields"].items():
        assert set(rule) <= {"type", "points", "abs_tol", "rel_tol", "min_f1", "min_items"}
        assert rule["type"] == table["fields"][field]["type"]
    text = json.dumps(public)
    for word in ("aliases", "required", "key_script", "negative_scores", '"key"'):
        assert word not in text, word
    for path in _hidden(name):
        assert path not in text, path
    key = _key(name)
    assert _leaked(key, "", text) == []


def test_public_grading_drops_aliases_and_required_items():
    table = copy.deepcopy(_bundle(HOST_SYNC).manifest["grading"])
    kernel = _key(HOST_SYNC)["dominant_kernel"]
    table["fields"]["dominant_kernel"]["aliases"] = [kernel, "volta_sgemm_128x64_tn"]
    public = KIND.public_grading(table, _shown(HOST_SYNC))
    assert public["fields"]["dominant_kernel"] == {"type": "kernel", "points": 1}
    assert public["fields"]["fixes"] == {"type": "set", "points": 2, "min_f1": 0.66}
    assert public["fields"]["evidence"] == {"type": "evidence", "points": 2, "min_items": 2}
    assert public["fields"]["gpu_idle_pct"] == {"type": "number", "points": 1, "abs_tol": 2.0}
    assert public["fields"]["idle_after_syncs_us"] == {
        "type": "number",
        "points": 1,
        "rel_tol": 0.05,
    }
    text = json.dumps(public)
    assert kernel not in text and "volta_sgemm" not in text
    assert "remove_host_syncs" not in text


def test_public_grading_drops_paths_solvers_are_not_shown():
    table = copy.deepcopy(_bundle(RANKS).manifest["grading"])
    shown = _shown(RANKS) - {"traces/rank1.json.gz", "answer.schema.json"}
    public = KIND.public_grading(table, shown)
    assert public["traces"] == ["traces/rank0.json.gz"]
    assert "schema" not in public
    # A table that names a hidden file where a shown one belongs does not show it.
    table["traces"] = ["traces/rank0.json.gz", "key.json"]
    table["schema"] = "derive_key.py"
    public = KIND.public_grading(table, _shown(RANKS))
    assert public["traces"] == ["traces/rank0.json.gz"]
    assert "schema" not in public
    assert "key.json" not in json.dumps(public) and "derive_key" not in json.dumps(public)


# -- public_details ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_public_details_never_show_the_key(name):
    key = _key(name)
    answers = _answers(name)
    assert "expert.json" in answers and len(answers) >= 3
    for path in answers:
        report = _report(name, path)
        # The report itself holds the key (for operators): the check below can fail.
        assert any("expected" in f for f in report["fields"])
        public = KIND.public_details(report)
        assert [set(f) for f in public["fields"]] == [set(PUBLIC_FIELD_KEYS)] * len(
            report["fields"]
        )
        text = json.dumps(public, ensure_ascii=False)
        assert '"expected"' not in text
        answer_text = _files(name)[path]
        assert _leaked(key, answer_text, text) == [], path
        messages = " | ".join(f["message"] for f in public["fields"])
        assert _leaked(key, answer_text, messages) == [], path


def test_the_leak_check_finds_the_key_in_a_full_report():
    # The private report of the lazy answer quotes the key's values in ``expected``.
    report = _report(HOST_SYNC, "bad/lazy.json")
    leaked = _leaked(_key(HOST_SYNC), _files(HOST_SYNC)["bad/lazy.json"], json.dumps(report))
    assert 6700.932 in leaked and "remove_host_syncs" in leaked
    assert _key(HOST_SYNC)["dominant_kernel"] in leaked


def test_public_details_keep_the_solvers_own_answer_and_scores():
    report = _report(HOST_SYNC, "bad/lazy.json")
    public = KIND.public_details(report)
    assert public["answer_valid"] is True and public["answer_error"] == ""
    assert public["score"] == report["score"]
    fields = {f["name"]: f for f in public["fields"]}
    assert fields["dominant_kernel"]["answer"] == "gemm"
    assert fields["dominant_kernel"]["message"] == "gemm is not the kernel asked for"
    assert fields["gpu_idle_pct"]["message"] == "0 is outside the tolerance (±2)"
    assert fields["bottleneck"]["hit"] is True
    assert public["texts"] == {
        "explanation": json.loads(_files(HOST_SYNC)["bad/lazy.json"])["explanation"]
    }


def test_public_details_of_an_invalid_answer_show_its_schema_error():
    answer = json.loads(_files(HOST_SYNC)["expert.json"])
    answer["evidence"][1] = 5
    report = grading.grade_answer(_spec(HOST_SYNC), {"answer.json": json.dumps(answer)})
    public = KIND.public_details(report)
    assert public["answer_valid"] is False
    assert public["answer_error"] == "$.evidence[1]: 5 is not of type 'string'"
    assert public["fields"] == [] and public["texts"] == {}
    assert public["score"]["partial"] == 0.0


# -- metrics, summary, headline ---------------------------------------------------------


def test_metric_values_of_the_expert_and_a_negative():
    expert = KIND.metric_values(_report(HOST_SYNC, "expert.json"))
    assert expert == {
        "signal_ratio": None,
        "reference_signal": None,
        "submission_signal": None,
        "strict_score": 1.0,
        "partial_score": 1.0,
        "fields_hit": 7.0,
        "fields_total": 7.0,
    }
    lazy_report = _report(HOST_SYNC, "bad/lazy.json")
    lazy = KIND.metric_values(lazy_report)
    assert lazy["strict_score"] == 0.0
    assert lazy["partial_score"] == pytest.approx(0.2727, abs=0.005)
    assert lazy["fields_hit"] == sum(f["hit"] for f in lazy_report["fields"])
    assert lazy["fields_total"] == 7.0
    assert {m.name for m in KIND.metrics} == set(expert)


def test_summary_lines_of_the_expert_and_a_negative():
    expert = KIND.summary_lines(_report(HOST_SYNC, "expert.json"))
    assert expert[0] == "score:       strict 1.0, partial 1.0 (11.0/11.0 points)"
    assert len(expert) == 1 + 7
    assert all(line.startswith("  ok   ") for line in expert[1:])
    assert "  ok   bottleneck [category] 1.0: matches" in expert

    report = _report(HOST_SYNC, "bad/lazy.json")
    lazy = KIND.summary_lines(report)
    assert lazy[0].startswith(f"score:       strict 0.0, partial {report['score']['partial']}")
    assert "  MISS dominant_kernel [kernel] 0.0: gemm is not the kernel asked for" in lazy
    missed = [f["name"] for f in report["fields"] if not f["hit"]]
    assert sum(line.startswith("  MISS") for line in lazy) == len(missed) > 0
    assert "6700.932" not in "\n".join(lazy)


def test_summary_lines_of_an_invalid_answer():
    report = grading.grade_answer(_spec(HOST_SYNC), {"answer.json": '{"bottleneck": 3}'})
    lines = KIND.summary_lines(report)
    assert lines[0].startswith("answer:      invalid: $")
    assert lines[1] == "score:       strict 0.0, partial 0.0 (0/0 points)"


def test_headline():
    assert KIND.headline(_report(HOST_SYNC, "expert.json")) == "7/7 fields, 1.0"
    report = _report(HOST_SYNC, "bad/distractor.json")
    hits = report["score"]["fields_hit"]
    assert KIND.headline(report) == f"{hits}/7 fields, {report['score']['partial']}"
    assert KIND.headline({"kind": "profiling", "verdict": "task_error"}) == ""


# -- rubric rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "errors"),
    [
        ({"type": "strict"}, []),
        ({"type": "partial_score", "at_least": 0.7}, []),
        ({"type": "partial_score", "at_least": 1}, []),
        ({"type": "partial_score", "at_least": 0}, ["at_least"]),
        ({"type": "partial_score", "at_least": 1.5}, ["at_least"]),
        ({"type": "partial_score", "at_least": True}, ["at_least"]),
        ({"type": "partial_score", "at_least": "0.5"}, ["at_least"]),
        ({"type": "partial_score"}, ["at_least"]),
        ({"type": "field", "name": "bottleneck"}, []),
        ({"type": "field", "name": ""}, ["name"]),
        ({"type": "field"}, ["name"]),
        ({"type": "field", "name": 3}, ["name"]),
        ({"type": "signal_ratio", "at_most": 0.25}, []),
        ({"type": "signal_ratio", "at_most": 0}, ["at_most"]),
    ],
)
def test_check_kind_rule(rule, errors):
    assert [field for field, _ in KIND.check_kind_rule(rule)] == errors


def test_the_catalog_rubric_rules_check_clean():
    criteria = _bundle(HOST_SYNC).criteria or ()
    rules = [c.rule for c in criteria if c.kind == "automatic"]
    assert {r["type"] for r in rules} == {"strict", "field", "partial_score"}
    assert all(KIND.check_kind_rule(r) == [] for r in rules)


def test_score_kind_rule_on_real_reports():
    expert = _report(HOST_SYNC, "expert.json")
    lazy = _report(HOST_SYNC, "bad/lazy.json")
    distractor = _report(HOST_SYNC, "bad/distractor.json")

    def score(rule: dict[str, Any], report: dict[str, Any]) -> tuple[bool, str]:
        return KIND.score_kind_rule(rule, report=report, on_target=True)

    assert score({"type": "strict"}, expert) == (True, "every field right")
    assert score({"type": "strict"}, lazy) == (False, "not every field right")

    partial = lazy["score"]["partial"]
    assert score({"type": "partial_score", "at_least": 0.25}, lazy) == (
        True,
        f"partial score {partial:g}, rule wants 0.25",
    )
    assert score({"type": "partial_score", "at_least": 0.3}, lazy)[0] is False
    assert score({"type": "partial_score", "at_least": 1}, expert)[0] is True

    assert score({"type": "field", "name": "bottleneck"}, lazy) == (True, "bottleneck: matches")
    assert score({"type": "field", "name": "bottleneck"}, distractor) == (
        False,
        "bottleneck: 'pageable_copies' is not the bottleneck",
    )
    assert score({"type": "field", "name": "fixes"}, lazy) == (
        False,
        "fixes: a required item is missing",
    )
    assert score({"type": "field", "name": "explanation"}, expert) == (
        False,
        "the report has no field 'explanation'",
    )
    assert score({"type": "signal_ratio", "at_most": 0.5}, expert) == (
        False,
        "the signal was not measured",
    )
    assert score({"type": "no_such_rule"}, expert)[0] is False


def test_score_kind_rule_on_an_invalid_answer():
    report = grading.grade_answer(_spec(HOST_SYNC), {"answer.json": "not json"})
    rule = {"type": "partial_score", "at_least": 0.1}
    assert KIND.score_kind_rule(rule, report=report, on_target=True)[0] is False
    rule = {"type": "field", "name": "bottleneck"}
    assert KIND.score_kind_rule(rule, report=report, on_target=True)[0] is False


# -- validation candidates --------------------------------------------------------------


def _infos(name: str) -> list[TaskFileInfo]:
    return [TaskFileInfo(f.path, f.role, f.expected_verdict, f.text) for f in _bundle(name).files]


def test_validation_candidates_of_a_catalog_task():
    files = _files(HOST_SYNC)
    candidates = KIND.validation_candidates(_bundle(HOST_SYNC).manifest, _infos(HOST_SYNC))
    assert [(c.path, c.role, c.expected_verdict) for c in candidates] == [
        ("expert.json", "solution", "accepted"),
        ("bad/distractor.json", "negative", "wrong_answer"),
        ("bad/lazy.json", "negative", "wrong_answer"),
        (KEY_CHECK, "reference", "accepted"),
    ]
    expert, distractor, lazy, key_check = candidates
    assert dict(expert.submission_files) == {"answer.json": files["expert.json"]}
    assert dict(expert.overrides) == {}
    assert dict(distractor.submission_files) == {"answer.json": files["bad/distractor.json"]}
    assert dict(distractor.overrides) == {"declared_partial": 0.3636}
    assert dict(lazy.overrides) == {"declared_partial": 0.2727}
    assert dict(key_check.submission_files) == {}
    assert dict(key_check.overrides) == {"check_key": True}


def test_validation_candidates_use_the_tasks_answer_file():
    manifest = copy.deepcopy(_bundle(HOST_SYNC).manifest)
    manifest["grading"]["answer_file"] = "profile.json"
    candidates = KIND.validation_candidates(manifest, _infos(HOST_SYNC))
    graded = [c for c in candidates if c.path != KEY_CHECK]
    assert all(set(c.submission_files) == {"profile.json"} for c in graded)


def test_validation_candidates_of_a_broken_table_still_list_the_answers():
    manifest = copy.deepcopy(_bundle(HOST_SYNC).manifest)
    manifest["grading"]["fields"]["bottleneck"]["type"] = "enum"
    candidates = KIND.validation_candidates(manifest, _infos(HOST_SYNC))
    assert [c.path for c in candidates][-1] == KEY_CHECK
    graded = [c for c in candidates if c.path != KEY_CHECK]
    assert [c.path for c in graded] == ["expert.json", "bad/distractor.json", "bad/lazy.json"]
    assert all(set(c.submission_files) == {"answer.json"} for c in graded)
    assert all(dict(c.overrides) == {} for c in graded)


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_the_answer_candidates_get_their_verdicts_through_the_kind(name):
    bundle = _bundle(name)
    for candidate in KIND.validation_candidates(bundle.manifest, _infos(name)):
        if candidate.path == KEY_CHECK:
            continue
        message = bundle_message(
            bundle, dict(candidate.submission_files), overrides=dict(candidate.overrides)
        )
        report = KIND.grade(message, backend_name="bwrap")
        assert report["verdict"] == candidate.expected_verdict, (candidate.path, report["reason"])


def test_a_negative_that_earns_other_than_it_declares_is_a_task_error():
    bundle = _bundle(HOST_SYNC)
    lazy = _files(HOST_SYNC)["bad/lazy.json"]
    message = bundle_message(bundle, {"answer.json": lazy}, overrides={"declared_partial": 0.5})
    report = KIND.grade(message, backend_name="bwrap")
    assert report["verdict"] == "task_error"
    assert report["reason"].startswith("this negative declares a partial score of 0.5 and earned")


# -- the key script, in the sandbox -----------------------------------------------------


@pytest.fixture(scope="module")
def sandbox() -> Any:
    return ready_backend("bwrap")


def test_the_key_script_reproduces_the_stored_key(sandbox):
    report = grading.check_key(_spec(HOST_SYNC), _files(HOST_SYNC), sandbox)
    assert report["verdict"] == "accepted", (report["reason"], report["logs"]["stderr"][-2000:])
    assert report["reason"] == "derive_key.py reproduces key.json"
    derived = json.loads(report["operator_notes"].removeprefix("derived key: "))
    assert derived["bottleneck"] == _key(HOST_SYNC)["bottleneck"]


def test_a_tampered_key_is_a_task_error_naming_the_fields(sandbox):
    bundle = _bundle(RANKS)
    key = _key(RANKS)
    key["straggler_rank"] = 0
    key["fixes"] = ["rebalance_ranks", "larger_batch"]
    # Within the comparison's tolerance: evidence reordered, a number off by 1e-8.
    key["evidence"] = list(reversed(key["evidence"]))
    key["gpu_idle_pct"] = key["gpu_idle_pct"] * (1 + 1e-8)
    files = {**_files(RANKS), "key.json": json.dumps(key)}
    spec = ProfilingSpec.from_manifest(bundle.manifest, files)
    report = grading.check_key(spec, files, sandbox)
    assert report["verdict"] == "task_error"
    assert report["reason"] == (
        "the key script's key differs from key.json in: straggler_rank, fixes"
    )


def test_the_kind_runs_the_key_check_for_the_key_script_candidate():
    bundle = _bundle(HOST_SYNC)
    report = KIND.grade(
        bundle_message(bundle, {}, overrides={"check_key": True}), backend_name="bwrap"
    )
    assert report["verdict"] == "accepted", report["reason"]
    key = _key(HOST_SYNC)
    key["gpu_idle_pct"] = 50.0
    message = bundle_message(bundle, {}, overrides={"check_key": True})
    message["task_files"]["key.json"] = json.dumps(key)
    report = KIND.grade(message, backend_name="bwrap")
    assert report["verdict"] == "task_error"
    assert report["reason"] == "the key script's key differs from key.json in: gpu_idle_pct"
