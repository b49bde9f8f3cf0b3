"""SWE-bench interchange on the catalog's debugging bundles: export, import, both round
trips, the commands, malformed instances, and one imported task graded for real."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from django.core.management import call_command
from django.core.management.base import CommandError

from graders.debugging.spec import DebugSpec
from graders.debugging.swebench import (
    EXTRA,
    ROOT,
    InstanceError,
    bundle_from_instance,
    instance_from_bundle,
    patch_adding,
    snapshot_hash,
)
from graders.files import grade_paths, read_bundle
from tasks.bundle import load_bundle
from tasks.models import Task

CATALOG = Path(__file__).resolve().parents[3] / "reference_solutions"
DEBUG_BUNDLES = sorted(path for path in CATALOG.glob("debug-*") if (path / "task.toml").is_file())
SOFTMAX = CATALOG / "debug-softmax-overflow"
CREATED = "2026-01-02T03:04:05Z"
SWEBENCH_FIELDS = {
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "hints_text",
    "created_at",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "version",
}

by_name = pytest.mark.parametrize("folder", DEBUG_BUNDLES, ids=lambda path: path.name)


def export(folder: Path) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    manifest, files = read_bundle(folder)
    return manifest, files, instance_from_bundle(manifest, files, created_at=CREATED)


def write_bundle(folder: Path, manifest: dict[str, Any], files: dict[str, str]) -> Path:
    """A bundle folder as import_swebench writes it."""
    for path, text in {"task.toml": tomli_w.dumps(manifest), **files}.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder


def git_apply(folder: Path, diff: str) -> dict[str, str]:
    """Apply ``diff`` in ``folder`` with the git command line; the files afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "apply", "-"], cwd=folder, input=diff.encode(), check=True, capture_output=True
    )
    return {
        path.relative_to(folder).as_posix(): path.read_bytes().decode("utf-8")
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_the_catalog_has_debugging_bundles():
    assert {"debug-softmax-overflow", "debug-triton-tail-mask"} <= {p.name for p in DEBUG_BUNDLES}


@by_name
def test_a_catalog_bundle_exports_as_a_swebench_instance(folder, tmp_path):
    manifest, files, instance = export(folder)
    spec = DebugSpec.from_manifest(manifest, files)

    assert set(instance) >= SWEBENCH_FIELDS
    assert instance["instance_id"] == manifest["slug"]
    assert instance["repo"] == f"benchwright/{manifest['slug']}"
    assert instance["base_commit"] == snapshot_hash(spec.source)
    assert len(instance["base_commit"]) == 40
    assert instance["problem_statement"] == files[manifest["statement"]]
    assert instance["patch"] == files["fix.diff"]
    assert instance["FAIL_TO_PASS"] == manifest["grading"]["fail_to_pass"]
    assert instance["PASS_TO_PASS"] == manifest["grading"]["pass_to_pass"]
    assert (instance["hints_text"], instance["version"], instance["created_at"]) == (
        "",
        "1",
        CREATED,
    )
    # The repository travels in the instance: the source files, no test among them.
    assert instance["snapshot"] == dict(spec.source)
    assert not set(instance["snapshot"]) & set(spec.tests)
    # test_patch adds every test file, visible and hidden, to an empty tree.
    assert git_apply(tmp_path / "tests-only", instance["test_patch"]) == dict(spec.tests)
    assert instance["test_patch"].count("--- /dev/null\n") == len(spec.tests)
    # The expert fix applies to the snapshot alone.
    for path, text in instance["snapshot"].items():
        (tmp_path / "snapshot" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "snapshot" / path).write_text(text, encoding="utf-8")
    fixed = git_apply(tmp_path / "snapshot", instance["patch"])
    assert set(fixed) == set(spec.source)
    assert fixed != dict(spec.source)


@by_name
def test_hidden_tests_are_named_only_where_swebench_puts_them(folder):
    manifest, files, instance = export(folder)
    spec = DebugSpec.from_manifest(manifest, files)
    hidden_files = sorted(set(spec.tests) - spec.visible_tests)
    hidden_ids = [t.id for t in spec.all_tests if not spec.is_visible(t)]
    assert hidden_files and hidden_ids
    for path in hidden_files:
        assert f"+++ b/{path}\n" in instance["test_patch"]
    lists = instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]
    assert set(hidden_ids) <= set(lists)
    # Peak-memory budgets are keyed by test id: they are the only other place.
    rest = {
        key: value
        for key, value in instance.items()
        if key not in ("test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
    }
    rest[EXTRA] = copy.deepcopy(rest[EXTRA])
    rest[EXTRA].get("grading", {}).pop("peak_memory", None)
    text = json.dumps(rest)
    for name in [*hidden_files, *hidden_ids]:
        assert name not in text


@by_name
def test_bundle_to_instance_to_bundle_keeps_the_task(folder, tmp_path):
    manifest, files, instance = export(folder)
    original = DebugSpec.from_manifest(manifest, files)

    imported_manifest, imported_files = bundle_from_instance(json.loads(json.dumps(instance)))
    imported = DebugSpec.from_manifest(imported_manifest, imported_files)

    assert imported.source == original.source
    assert imported.tests == original.tests
    assert imported.visible_tests == original.visible_tests
    assert imported_files[imported.solution] == files[original.solution]
    assert imported.fail_to_pass == original.fail_to_pass
    assert imported.pass_to_pass == original.pass_to_pass
    assert all(original.may_change(path) for path in imported.fix_paths)
    for key in ("test_timeout_s", "network", "tolerances", "peak_memory_mib", "limits"):
        assert getattr(imported, key) == getattr(original, key)
    for key in ("title", "difficulty", "tags", "hardware", "statement"):
        assert imported_manifest[key] == manifest[key]
    kept = {e["path"]: (e["role"], e["visibility"]) for e in manifest["files"]}
    for entry in imported_manifest["files"]:
        if entry["path"] != "swebench.json":
            assert kept[entry["path"]] == (entry["role"], entry["visibility"])
    # The real bundle checks (what import_tasks runs) accept the written folder.
    bundle = load_bundle(
        write_bundle(tmp_path / manifest["slug"], imported_manifest, imported_files)
    )
    assert bundle.kind == "debugging"


@by_name
def test_instance_to_bundle_to_instance_gives_every_field_back(folder):
    *_, instance = export(folder)
    manifest, files = bundle_from_instance(instance)
    again = instance_from_bundle(manifest, files, created_at="another time")
    assert json.dumps(again) == json.dumps(instance)


def test_the_test_patch_adds_files_exactly_as_they_are(tmp_path):
    tests = {
        "tests/empty.py": "",
        "tests/no_newline.py": "x = 1\ny = 2",
        "tests/one_line.py": "z = 3\n",
        "tests/crlf.py": "a = 1\r\nb = 2\r\n",
        "tests/deep/test_more.py": "\n\n# blank lines first\n",
    }
    assert git_apply(tmp_path, patch_adding(tests)) == tests


def test_a_foreign_instance_keeps_its_identity_and_takes_defaults(tmp_path):
    *_, instance = export(SOFTMAX)
    foreign = {key: value for key, value in instance.items() if key != EXTRA}
    foreign.update(
        instance_id="numerics__softmax-1",
        repo="example/numerics",
        base_commit="0123456789abcdef0123456789abcdef01234567",
        hints_text="see the discussion",
        version="3.0",
        FAIL_TO_PASS=json.dumps(instance["FAIL_TO_PASS"]),  # as the dataset stores them
        PASS_TO_PASS=json.dumps(instance["PASS_TO_PASS"]),
        environment_setup_commit="fedcba",  # SWE-bench fields with no use here are ignored
    )
    manifest, files = bundle_from_instance(foreign)

    assert manifest["slug"] == "numerics-softmax-1"
    assert manifest["title"] == "NaN attention weights on large scores"
    assert manifest["grading"]["fail_to_pass"] == instance["FAIL_TO_PASS"]
    assert all(e["visibility"] == "hidden" for e in manifest["files"] if e["role"] == "test")
    load_bundle(write_bundle(tmp_path / "b", manifest, files))
    again = instance_from_bundle(manifest, files)
    for key in ("instance_id", "repo", "base_commit", "hints_text", "version", "created_at"):
        assert again[key] == foreign[key]
    assert again["FAIL_TO_PASS"] == instance["FAIL_TO_PASS"]


def test_visible_tests_given_by_the_caller_win():
    *_, instance = export(SOFTMAX)
    manifest, _ = bundle_from_instance(instance, visible_tests=["tests/test_softmax_hidden.py"])
    shown = {e["path"] for e in manifest["files"] if e["visibility"] == "prompt"}
    assert f"{ROOT}/tests/test_softmax_hidden.py" in shown
    assert f"{ROOT}/tests/test_repro.py" not in shown


def _without(instance: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in instance.items() if k != key}


def _bad_test_patch(instance: dict[str, Any]) -> dict[str, Any]:
    # A test patch written against other source: its context is not in the snapshot.
    diff = (
        "diff --git a/softmax.py b/softmax.py\n--- a/softmax.py\n+++ b/softmax.py\n"
        "@@ -1,2 +1,2 @@\n-not this line\n+but this one\n not here either\n"
    )
    return {**instance, "test_patch": instance["test_patch"] + diff}


MALFORMED = [
    ("missing test_patch", lambda i: _without(i, "test_patch"), "test_patch", "missing"),
    ("missing statement", lambda i: _without(i, "problem_statement"), "problem_statement", "miss"),
    ("missing snapshot", lambda i: _without(i, "snapshot"), "snapshot", "missing"),
    ("missing lists", lambda i: _without(i, "PASS_TO_PASS"), "PASS_TO_PASS", "missing"),
    ("test_patch off", _bad_test_patch, "test_patch", "does not apply to the snapshot"),
    ("test_patch garbage", lambda i: {**i, "test_patch": "no"}, "test_patch", "cannot be read"),
    ("patch off", lambda i: {**i, "patch": i["patch"].replace("logits)", "x)")}, "patch", "apply"),
    ("F2P a number", lambda i: {**i, "FAIL_TO_PASS": 42}, "FAIL_TO_PASS", "must be a list"),
    ("F2P a string", lambda i: {**i, "FAIL_TO_PASS": "not json"}, "FAIL_TO_PASS", "list"),
    ("F2P empty", lambda i: {**i, "FAIL_TO_PASS": []}, "FAIL_TO_PASS", "at least one"),
    ("F2P not an id", lambda i: {**i, "FAIL_TO_PASS": ["tests"]}, "FAIL_TO_PASS", "path::"),
    (
        "F2P file not created",
        lambda i: {**i, "FAIL_TO_PASS": ["tests/test_other.py::test_a"]},
        "FAIL_TO_PASS",
        "tests/test_other.py is not a file the test_patch creates",
    ),
    (
        "P2P no such function",
        lambda i: {**i, "PASS_TO_PASS": ["tests/test_repro.py::test_nowhere"]},
        "PASS_TO_PASS",
        "no top-level def test_nowhere",
    ),
    (
        "P2P also F2P",
        lambda i: {**i, "PASS_TO_PASS": i["FAIL_TO_PASS"][:1]},
        "PASS_TO_PASS",
        "also in fail_to_pass",
    ),
    ("bad id", lambda i: {**i, "instance_id": "!!"}, "instance_id", "slug"),
    ("snapshot escapes", lambda i: {**i, "snapshot": {"../x.py": ""}}, "snapshot", "'..'"),
    (
        "unknown extra",
        lambda i: {**i, EXTRA: {"grading": {"root": "src"}}},
        "benchwright.grading.root",
        "unknown",
    ),
    (
        "bad network",
        lambda i: {**i, EXTRA: {"grading": {"network": "internet"}}},
        "benchwright.grading.network",
        "must be one of",
    ),
    (
        "visible test unknown",
        lambda i: {**i, EXTRA: {"visible_tests": ["tests/nope.py"]}},
        "benchwright.visible_tests",
        "not a test file",
    ),
]


@pytest.mark.parametrize(
    ("change", "field", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_a_malformed_instance_is_refused_naming_the_field(change, field, message):
    *_, instance = export(SOFTMAX)
    with pytest.raises(InstanceError) as caught:
        bundle_from_instance(change(copy.deepcopy(instance)))
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{field}: ")


def test_a_snapshot_given_apart_replaces_the_instances_own():
    *_, instance = export(SOFTMAX)
    _, files = bundle_from_instance(_without(instance, "snapshot"), snapshot=instance["snapshot"])
    assert files[f"{ROOT}/softmax.py"] == instance["snapshot"]["softmax.py"]
    with pytest.raises(InstanceError, match=r"visible_tests: tests/x\.py"):
        bundle_from_instance(instance, visible_tests=["tests/x.py"])


def test_the_commands_round_trip_the_catalog_through_files(tmp_path, capsys):
    first = tmp_path / "catalog.jsonl"
    call_command("export_swebench", *map(str, DEBUG_BUNDLES), "--out", str(first))
    lines = first.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["instance_id"] for line in lines] == [p.name for p in DEBUG_BUNDLES]

    out = tmp_path / "bundles"
    call_command("import_swebench", str(first), "--out", str(out), "--no-import")
    assert f"wrote {len(DEBUG_BUNDLES)} bundle(s) under {out}" in capsys.readouterr().out
    folders = sorted(out.iterdir())
    assert [f.name for f in folders] == [p.name for p in DEBUG_BUNDLES]
    for folder in folders:
        load_bundle(folder)

    second = tmp_path / "again.jsonl"
    call_command("export_swebench", *map(str, folders), "--out", str(second))
    assert second.read_bytes() == first.read_bytes()


def test_export_writes_to_standard_output_without_out(capsys):
    call_command("export_swebench", str(SOFTMAX))
    instance = json.loads(capsys.readouterr().out)
    assert instance["instance_id"] == "debug-softmax-overflow"


def test_export_refuses_a_bundle_of_another_kind():
    kernel = next(p for p in sorted(CATALOG.iterdir()) if not p.name.startswith("debug-"))
    with pytest.raises(
        CommandError, match=rf"{kernel.name}/task.toml: kind: is '\w+'; only debugging"
    ):
        call_command("export_swebench", str(kernel))


def test_export_names_a_folder_without_a_bundle(tmp_path):
    with pytest.raises(CommandError, match=r"task\.toml: not found"):
        call_command("export_swebench", str(tmp_path))


def test_import_names_the_line_and_the_field(tmp_path):
    *_, instance = export(SOFTMAX)
    source = tmp_path / "in.jsonl"
    bad = {**instance, "FAIL_TO_PASS": {"not": "a list"}}
    source.write_text(json.dumps(instance) + "\n\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"in.jsonl:3: FAIL_TO_PASS: must be a list"):
        call_command("import_swebench", str(source), "--out", str(tmp_path / "o"), "--no-import")
    long_title = {**instance, EXTRA: {"title": "x" * 300}}
    source.write_text(json.dumps(long_title) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"in.jsonl:1: .*task\.toml: title: is longer than"):
        call_command("import_swebench", str(source), "--out", str(tmp_path / "o"), "--no-import")
    source.write_text("{\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"in.jsonl:1: not valid JSON"):
        call_command("import_swebench", str(source), "--out", str(tmp_path / "o"), "--no-import")
    source.write_text(json.dumps(instance) + "\n" + json.dumps(instance) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"in.jsonl:2: instance_id: debug-softmax-overflow"):
        call_command("import_swebench", str(source), "--out", str(tmp_path / "o"), "--no-import")


@pytest.mark.django_db
def test_import_swebench_imports_the_bundles(tmp_path, capsys):
    *_, instance = export(SOFTMAX)
    foreign = {**_without(instance, EXTRA), "instance_id": "softmax-from-swebench"}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(foreign) + "\n", encoding="utf-8")

    call_command(
        "import_swebench",
        str(source),
        "--out",
        str(tmp_path / "out"),
        "--visible-test",
        "tests/test_repro.py",
    )

    assert "softmax-from-swebench: created task, version 1" in capsys.readouterr().out
    version = Task.objects.get(slug="softmax-from-swebench").current_version
    shown = {f.path: f.visibility for f in version.files.all()}
    assert shown[f"{ROOT}/tests/test_repro.py"] == "prompt"
    assert shown[f"{ROOT}/tests/test_softmax_hidden.py"] == "hidden"
    assert shown["fix.diff"] == shown["swebench.json"] == "hidden"


@pytest.mark.slow
def test_an_imported_task_accepts_its_expert_fix_in_the_sandbox(tmp_path):
    *_, instance = export(SOFTMAX)
    foreign = _without(instance, EXTRA)  # defaults: every test hidden, default settings
    manifest, files = bundle_from_instance(foreign)
    folder = write_bundle(tmp_path / manifest["slug"], manifest, files)
    load_bundle(folder)

    report = grade_paths(folder, folder / "fix.diff")

    assert report["verdict"] == "accepted", report.get("reason")
    fail, keep = len(instance["FAIL_TO_PASS"]), len(instance["PASS_TO_PASS"])
    assert f"FAIL_TO_PASS {fail}/{fail} pass, PASS_TO_PASS {keep}/{keep} pass" in report["reason"]
