"""The grading table of a profiling task of the ``answer`` form (``ProfilingSpec``).

Every test starts from a real catalog bundle, breaks one thing in its manifest or
in one of its files, and checks that the error names the file and the field at
fault: a ``GradingTableError`` from ``ProfilingSpec.from_manifest``, or the
``BundleInvalid`` text an author gets from ``tasks.bundle.parse_bundle``.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from graders.contract import GradingTableError
from graders.filetext import file_bytes, stored_text
from graders.profiling.spec import FieldRule, ProfilingSpec
from tasks.bundle import Bundle, BundleInvalid, load_bundle, parse_bundle

CATALOG = Path(__file__).resolve().parents[3] / "reference_solutions"
HOST_SYNC = "prof-host-sync"  # one trace
RANKS = "prof-rank-imbalance"  # two traces
ANSWER_TASKS = sorted(p.parent.name for p in CATALOG.glob("prof-*/key.json"))
TRACE = "traces/rank0.json.gz"


@cache
def _bundle(name: str) -> Bundle:
    return load_bundle(CATALOG / name)


def _task(name: str = HOST_SYNC) -> tuple[dict[str, Any], dict[str, str]]:
    """A fresh copy of the bundle's manifest and files (path -> stored text)."""
    bundle = _bundle(name)
    return copy.deepcopy(bundle.manifest), {f.path: f.text for f in bundle.files}


def _entry(manifest: dict[str, Any], path: str) -> dict[str, Any]:
    return next(e for e in manifest["files"] if e["path"] == path)


def _error(manifest: dict[str, Any], files: dict[str, str]) -> GradingTableError:
    with pytest.raises(GradingTableError) as caught:
        ProfilingSpec.from_manifest(manifest, files)
    return caught.value


def _json(files: dict[str, str], path: str) -> Any:
    return json.loads(files[path])


def _bundle_files(name: str) -> dict[str, bytes]:
    """The bundle as ``parse_bundle`` takes it: every file's bytes, task.toml included."""
    bundle = _bundle(name)
    return {**bundle.file_data(), "task.toml": bundle.manifest_text.encode()}


def _refused(name: str, changes: dict[str, bytes]) -> BundleInvalid:
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle({**_bundle_files(name), **changes}, name=name)
    return caught.value


# -- the catalog's bundles parse ------------------------------------------------------


def test_the_catalog_has_answer_tasks():
    assert HOST_SYNC in ANSWER_TASKS and RANKS in ANSWER_TASKS
    assert len(ANSWER_TASKS) >= 6


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_parse_bundle_accepts_the_unmodified_catalog_bundle(name):
    bundle = parse_bundle(_bundle_files(name), name=name)
    assert bundle.kind == "profiling"
    assert bundle.slug == name
    assert bundle.grading["form"] == "answer"


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_the_spec_holds_the_tables_settings(name):
    manifest, files = _task(name)
    spec = ProfilingSpec.from_manifest(manifest, files)
    grading = manifest["grading"]
    assert spec.traces == tuple(grading["traces"])
    assert len(spec.loaded) == len(spec.traces)
    assert all(trace.event_count > 0 for trace in spec.loaded)
    assert spec.key == _json(files, grading["key"])
    assert spec.schema == _json(files, grading["schema"])
    assert (spec.key_path, spec.key_script, spec.answer_file) == (
        "key.json",
        "derive_key.py",
        "answer.json",
    )
    assert [r.name for r in spec.fields] == list(grading["fields"])
    assert dict(spec.negative_scores) == grading["negative_scores"]
    # Every scored field is required by the schema; the text field is not scored.
    assert {r.name for r in spec.scored_fields} <= set(spec.schema["required"])
    assert [r.name for r in spec.fields if not r.scored] == ["explanation"]


def test_the_host_sync_fields_are_parsed_with_their_settings():
    spec = ProfilingSpec.from_manifest(*_task(HOST_SYNC))
    rules = {r.name: r for r in spec.fields}
    assert rules["bottleneck"] == FieldRule("bottleneck", "category", points=3.0)
    assert rules["gpu_idle_pct"] == FieldRule("gpu_idle_pct", "number", abs_tol=2.0)
    assert rules["idle_after_syncs_us"] == FieldRule("idle_after_syncs_us", "number", rel_tol=0.05)
    assert rules["evidence"] == FieldRule("evidence", "evidence", points=2.0, min_items=2)
    assert rules["fixes"] == FieldRule(
        "fixes", "set", points=2.0, required=("remove_host_syncs",), min_f1=0.66
    )
    assert spec.negative_scores == {"bad/distractor.json": 0.3636, "bad/lazy.json": 0.2727}
    assert spec.evidence_prefix(0) == ""


def test_a_task_with_two_traces_loads_both_in_rank_order():
    spec = ProfilingSpec.from_manifest(*_task(RANKS))
    assert spec.traces == ("traces/rank0.json.gz", "traces/rank1.json.gz")
    assert [trace.name for trace in spec.loaded] == list(spec.traces)
    assert (spec.evidence_prefix(0), spec.evidence_prefix(1)) == ("rank0/", "rank1/")


# -- the [grading] table --------------------------------------------------------------


def _fields(g: dict[str, Any]) -> dict[str, Any]:
    return g["fields"]


TABLE_ERRORS = [
    # (change to [grading], the field named, words of the message)
    (lambda g: g.update(timeout_s=30), "grading.timeout_s", "unknown key"),
    (lambda g: g.update(form="quiz"), "grading.form", "must be one of"),
    (lambda g: g.update(form="reprofile"), "grading.form", "other settings"),
    (lambda g: g.update(traces=["traces/rank9.json.gz"]), "grading.traces", "rank9.json.gz"),
    (lambda g: g.update(traces=TRACE), "grading.traces", "list of trace files"),
    (lambda g: g.update(traces=[]), "grading.traces", "list of trace files"),
    (lambda g: g.update(traces=[TRACE, TRACE]), "grading.traces", "twice"),
    (lambda g: g.update(traces=[f"./{TRACE}"]), "grading.traces", "plain relative path"),
    (lambda g: g.pop("schema"), "grading.schema", "is required"),
    (lambda g: g.update(key="missing.json"), "grading.key", "missing.json is not a file"),
    (lambda g: g.update(key_script="statement.md"), "grading.key_script", "Python file"),
    (lambda g: g.update(answer_file="answer.txt"), "grading.answer_file", ".json"),
    (lambda g: g.update(answer_file="out/answer.json"), "grading.answer_file", ".json"),
    (lambda g: g.update(answer_file=7), "grading.answer_file", ".json"),
    (lambda g: g.update(fields={}), "grading.fields", "table of answer fields"),
    (
        lambda g: g.update(fields={"explanation": {"type": "text"}}),
        "grading.fields",
        "at least one scored field",
    ),
    (
        lambda g: _fields(g)["bottleneck"].update(type="enum"),
        "grading.fields.bottleneck.type",
        "must be one of",
    ),
    (
        lambda g: _fields(g)["bottleneck"].pop("type"),
        "grading.fields.bottleneck.type",
        "must be one of",
    ),
    (
        lambda g: _fields(g)["bottleneck"].update(abs_tol=1.0),
        "grading.fields.bottleneck.abs_tol",
        "not a setting of a category field",
    ),
    (
        lambda g: _fields(g)["gpu_idle_pct"].update(aliases=["idle"]),
        "grading.fields.gpu_idle_pct.aliases",
        "not a setting of a number field",
    ),
    (
        lambda g: _fields(g)["fixes"].update(min_items=2),
        "grading.fields.fixes.min_items",
        "not a setting of a set field",
    ),
    (
        lambda g: _fields(g)["evidence"].update(required=["ev:38"]),
        "grading.fields.evidence.required",
        "not a setting of a evidence field",
    ),
    (
        lambda g: _fields(g)["explanation"].update(points=1),
        "grading.fields.explanation.points",
        "not a setting of a text field",
    ),
    (
        lambda g: _fields(g)["bottleneck"].update(points=-1),
        "grading.fields.bottleneck.points",
        "must lie in",
    ),
    (
        lambda g: _fields(g)["bottleneck"].update(points="3"),
        "grading.fields.bottleneck.points",
        "must be a number",
    ),
    (
        lambda g: _fields(g)["idle_after_syncs_us"].update(rel_tol=1.5),
        "grading.fields.idle_after_syncs_us.rel_tol",
        "must lie in",
    ),
    (
        lambda g: _fields(g)["gpu_idle_pct"].update(abs_tol=-2),
        "grading.fields.gpu_idle_pct.abs_tol",
        "must lie in",
    ),
    (
        lambda g: _fields(g)["evidence"].update(min_items=0),
        "grading.fields.evidence.min_items",
        "at least 1",
    ),
    (
        lambda g: _fields(g)["evidence"].update(min_items=1.5),
        "grading.fields.evidence.min_items",
        "whole number",
    ),
    (
        lambda g: _fields(g)["fixes"].update(min_f1=0),
        "grading.fields.fixes.min_f1",
        "above 0",
    ),
    (
        lambda g: _fields(g)["fixes"].update(required="remove_host_syncs"),
        "grading.fields.fixes.required",
        "list of strings",
    ),
    (
        lambda g: _fields(g)["fixes"].update(required=["remove_host_syncs", "pin_host_memory"]),
        "grading.fields.fixes.required",
        "pin_host_memory is not in the key's fixes",
    ),
    (
        lambda g: _fields(g).update(stall_us={"type": "number"}),
        "grading.fields.stall_us",
        "not a property of the answer schema",
    ),
    (
        lambda g: g["negative_scores"].pop("bad/lazy.json"),
        "grading.negative_scores",
        "bad/lazy.json must declare the partial score",
    ),
    (
        lambda g: g.pop("negative_scores"),
        "grading.negative_scores",
        "must declare the partial score",
    ),
    (
        lambda g: g["negative_scores"].update({"expert.json": 0.5}),
        'grading.negative_scores."expert.json"',
        "expert.json is not a negative example",
    ),
    (
        lambda g: g["negative_scores"].update({"statement.md": 0.0}),
        'grading.negative_scores."statement.md"',
        "statement.md is not a negative example",
    ),
    (
        lambda g: g["negative_scores"].update({"bad/lazy.json": 1.5}),
        "grading.negative_scores.bad/lazy.json",
        "must lie in",
    ),
]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    TABLE_ERRORS,
    ids=[f"{i}-{field}" for i, (_, field, _) in enumerate(TABLE_ERRORS)],
)
def test_a_bad_grading_setting_names_its_field(change, field, words):
    manifest, files = _task()
    change(manifest["grading"])
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", field), str(error)
    assert words in error.message, str(error)
    assert str(error).startswith(f"task.toml: {field}: ")


def test_a_missing_grading_table_is_named():
    manifest, files = _task()
    del manifest["grading"]
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", "grading")


# -- the traces -----------------------------------------------------------------------


def test_a_trace_listed_in_grading_but_not_in_the_bundle_is_named():
    manifest, files = _task()
    del files[TRACE]
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", "grading.traces")
    assert f"{TRACE} is not a file of the bundle" in error.message


@pytest.mark.parametrize("index", [0, 1])
def test_a_trace_that_is_not_an_artifact_is_named_by_its_position(index):
    manifest, files = _task(RANKS)
    path = manifest["grading"]["traces"][index]
    _entry(manifest, path)["role"] = "other"
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", f"grading.traces[{index}]")
    assert f"{path} must have role artifact" in error.message


def test_a_hidden_trace_is_refused():
    manifest, files = _task(RANKS)
    _entry(manifest, "traces/rank1.json.gz")["visibility"] = "hidden"
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", "grading.traces")
    assert "traces/rank1.json.gz must be shown to solvers" in error.message


def _with_trace(data: bytes, name: str = HOST_SYNC, path: str = TRACE) -> GradingTableError:
    manifest, files = _task(name)
    files[path] = stored_text(path, data)
    return _error(manifest, files)


def test_a_corrupt_gzip_trace_is_the_traces_error():
    good = file_bytes(TRACE, _task()[1][TRACE])
    error = _with_trace(good[: len(good) // 2])
    assert error.file == TRACE
    assert "gzip" in error.message
    assert str(error).startswith(f"{TRACE}: ")


def test_a_json_trace_without_trace_events_is_the_traces_error():
    error = _with_trace(gzip.compress(json.dumps({"events": []}).encode()))
    assert error.file == TRACE
    assert "traceEvents" in error.message


def test_a_trace_with_a_bad_event_names_the_event():
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
    ]
    error = _with_trace(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    assert error.file == TRACE
    assert "traceEvents[1].ts" in error.message


def test_the_second_rank_trace_is_named_when_it_is_broken():
    path = "traces/rank1.json.gz"
    error = _with_trace(b"not gzip at all", name=RANKS, path=path)
    assert error.file == path


# -- the schema -----------------------------------------------------------------------


def _with_schema(schema: Any) -> GradingTableError:
    manifest, files = _task()
    files["answer.schema.json"] = schema if isinstance(schema, str) else json.dumps(schema)
    return _error(manifest, files)


def test_a_schema_that_is_not_an_object_schema_is_named():
    error = _with_schema({"type": "array", "items": {"type": "string"}})
    assert (error.file, error.field) == ("answer.schema.json", "type")
    error = _with_schema([{"type": "object"}])
    assert (error.file, error.field) == ("answer.schema.json", "type")


def test_an_invalid_schema_names_the_place_in_it():
    schema = _json(_task()[1], "answer.schema.json")
    schema["properties"]["gpu_idle_pct"]["type"] = "decimal"
    error = _with_schema(schema)
    assert (error.file, error.field) == ("answer.schema.json", "properties.gpu_idle_pct.type")


def test_a_schema_that_is_not_json_names_its_line():
    error = _with_schema('{"type": "object",\n "properties": }')
    assert error.file == "answer.schema.json"
    assert "line 2" in error.message


def test_a_hidden_schema_is_refused():
    manifest, files = _task()
    _entry(manifest, "answer.schema.json")["visibility"] = "hidden"
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", "grading.schema")
    assert "must be shown to solvers" in error.message


def test_a_scored_field_the_schema_does_not_require_is_named():
    schema = _json(_task()[1], "answer.schema.json")
    schema["required"].remove("syncs_per_step")
    error = _with_schema(schema)
    assert (error.file, error.field) == ("task.toml", "grading.fields.syncs_per_step")
    assert "a scored field must be required by answer.schema.json" in error.message


def test_a_text_field_need_not_be_required():
    schema = _json(_task()[1], "answer.schema.json")
    assert "explanation" not in schema["required"]
    manifest, files = _task()
    spec = ProfilingSpec.from_manifest(manifest, files)
    assert "explanation" in {r.name for r in spec.fields}


# -- the key --------------------------------------------------------------------------


def _with_key(change: Callable[[dict[str, Any]], None], name: str = HOST_SYNC) -> Any:
    manifest, files = _task(name)
    key = _json(files, "key.json")
    change(key)
    files["key.json"] = json.dumps(key)
    return _error(manifest, files)


def test_a_key_shown_to_solvers_is_refused():
    manifest, files = _task()
    _entry(manifest, "key.json")["visibility"] = "prompt"
    error = _error(manifest, files)
    assert (error.file, error.field) == ("task.toml", "grading.key")
    assert "must be hidden" in error.message


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda k: k.update(bottleneck="slow_gpu"), "$.bottleneck", "'slow_gpu'"),
        (lambda k: k.update(gpu_idle_pct="42.79"), "$.gpu_idle_pct", "not of type 'number'"),
        (lambda k: k["evidence"].append(38), "$.evidence[16]", "not of type 'string'"),
        (lambda k: k["evidence"].__setitem__(0, "event 38"), "$.evidence[0]", "does not match"),
        (lambda k: k.pop("fixes"), "$", "'fixes' is a required property"),
        (lambda k: k.update(verdict="yes"), "$", "Additional properties"),
    ],
)
def test_a_key_that_breaks_the_schema_names_the_json_path(change, field, words):
    error = _with_key(change)
    assert (error.file, error.field) == ("key.json", field), str(error)
    assert error.message.startswith("not a valid answer: ")
    assert words in error.message


def test_a_key_without_a_required_set_item_names_the_setting():
    error = _with_key(lambda k: k.update(fixes=["pin_host_memory"]))
    assert (error.file, error.field) == ("task.toml", "grading.fields.fixes.required")
    assert "remove_host_syncs is not in the key's fixes" in error.message


def test_a_key_that_is_not_json_names_its_file():
    manifest, files = _task()
    files["key.json"] = files["key.json"][:40]
    error = _error(manifest, files)
    assert error.file == "key.json"
    assert "line" in error.message


# -- through parse_bundle: the error an author reads ----------------------------------


def _one_error(refused: BundleInvalid) -> tuple[str, str]:
    assert len(refused.errors) == 1, str(refused)
    error = refused.errors[0]
    return error.path, error.field


def test_parse_bundle_names_a_corrupt_trace_file():
    good = _bundle_files(HOST_SYNC)[TRACE]
    refused = _refused(HOST_SYNC, {TRACE: good[:200]})
    assert _one_error(refused) == (f"{HOST_SYNC}/{TRACE}", "")
    assert str(refused).startswith(f"{HOST_SYNC}/{TRACE}: ")
    assert "gzip" in str(refused)


def test_parse_bundle_names_a_trace_without_trace_events():
    refused = _refused(HOST_SYNC, {TRACE: gzip.compress(b'{"displayTimeUnit": "ms"}')})
    assert _one_error(refused) == (f"{HOST_SYNC}/{TRACE}", "")
    assert "traceEvents" in str(refused)


def test_parse_bundle_names_the_key_field_that_breaks_the_schema():
    key = json.loads(_bundle_files(HOST_SYNC)["key.json"])
    key["bottleneck"] = "slow_gpu"
    refused = _refused(HOST_SYNC, {"key.json": json.dumps(key).encode()})
    assert _one_error(refused) == (f"{HOST_SYNC}/key.json", "$.bottleneck")
    assert str(refused).startswith(f"{HOST_SYNC}/key.json: $.bottleneck: not a valid answer")


def test_parse_bundle_names_a_schema_that_is_not_an_object_schema():
    refused = _refused(HOST_SYNC, {"answer.schema.json": b'{"type": "array"}'})
    assert _one_error(refused) == (f"{HOST_SYNC}/answer.schema.json", "type")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda g: g["fields"]["bottleneck"].update(abs_tol=1.0),
            "grading.fields.bottleneck.abs_tol",
        ),
        (lambda g: g["fields"]["fixes"].update(type="list"), "grading.fields.fixes.type"),
        (lambda g: g.update(answer_file="answer.yaml"), "grading.answer_file"),
        (lambda g: g.update(key_script="key.json"), "grading.key_script"),
        (lambda g: g["negative_scores"].pop("bad/distractor.json"), "grading.negative_scores"),
        (lambda g: g.update(form="multiple_choice"), "grading.form"),
        (lambda g: g.update(hint="look at the syncs"), "grading.hint"),
    ],
)
def test_parse_bundle_names_the_task_toml_field(change, field):
    manifest = copy.deepcopy(_bundle(HOST_SYNC).manifest)
    change(manifest["grading"])
    refused = _refused(HOST_SYNC, {"task.toml": tomli_w.dumps(manifest).encode()})
    assert _one_error(refused) == (f"{HOST_SYNC}/task.toml", field)
    assert str(refused).startswith(f"{HOST_SYNC}/task.toml: {field}: ")


def test_parse_bundle_names_a_key_that_is_shown():
    manifest = copy.deepcopy(_bundle(HOST_SYNC).manifest)
    _entry(manifest, "key.json")["visibility"] = "prompt"
    refused = _refused(HOST_SYNC, {"task.toml": tomli_w.dumps(manifest).encode()})
    assert any(
        (e.path, e.field) == (f"{HOST_SYNC}/task.toml", "grading.key")
        and "must be hidden" in e.message
        for e in refused.errors
    ), str(refused)


def test_a_key_citing_no_event_of_the_traces_names_the_id():
    error = _with_key(lambda key: key["evidence"].append("corr:999999999"))
    assert (error.file, error.field) == ("key.json", f"evidence[{16}]")
    assert "corr:999999999 names no event of the traces" in error.message


def test_a_key_with_fewer_ids_than_min_items_is_refused():
    error = _with_key(lambda key: key.update(evidence=key["evidence"][:1]))
    assert (error.file, error.field) == ("task.toml", "grading.fields.evidence.min_items")
    assert "holds 1 ids: no answer can cite 2" in error.message
