"""A debugging bundle's [grading] table: every error names the file and the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from graders.contract import GradingTableError
from graders.debugging.spec import DebugSpec

from .conftest import bundle_parts


def parse(bundle, change=None, files_change=None) -> DebugSpec:
    manifest, files = bundle_parts(bundle)
    manifest = copy.deepcopy(manifest)
    if change:
        change(manifest)
    if files_change:
        files_change(files)
    return DebugSpec.from_manifest(manifest, files)


def test_the_catalog_task_parses_into_tree_tests_and_groups(softmax_bundle):
    spec = parse(softmax_bundle)
    assert spec.root == "repo"
    assert set(spec.source) == {"softmax.py"}
    assert set(spec.tests) == {"tests/test_repro.py", "tests/test_softmax_hidden.py"}
    assert spec.visible_tests == {"tests/test_repro.py"}
    assert spec.fail_to_pass[0].id == ("tests/test_repro.py::test_large_scores_stay_finite")
    assert spec.fail_to_pass[1].module == "tests.test_softmax_hidden"
    assert spec.solution == "fix.diff"
    assert spec.may_change("softmax.py") and not spec.may_change("tests/test_repro.py")
    assert spec.network == "none"
    assert parse(softmax_bundle, grading("network", "loopback")).network == "loopback"


def grading(key: str, value: Any):
    def change(manifest: dict[str, Any]) -> None:
        manifest["grading"][key] = value

    return change


@pytest.mark.parametrize(
    ("key", "value", "field", "words"),
    [
        ("root", "../up", "grading.root", "plain relative folder"),
        ("fail_to_pass", [], "grading.fail_to_pass", "at least one test"),
        ("fail_to_pass", ["tests/test_repro.py"], "grading.fail_to_pass", "not path::function"),
        (
            "fail_to_pass",
            ["tests/test_nope.py::test_x"],
            "grading.fail_to_pass",
            "is not a test file under the root",
        ),
        (
            "fail_to_pass",
            ["tests/test_repro.py::test_missing"],
            "grading.fail_to_pass",
            "has no top-level def test_missing",
        ),
        (
            "pass_to_pass",
            ["tests/test_repro.py::test_large_scores_stay_finite"],
            "grading.pass_to_pass",
            "also in fail_to_pass",
        ),
        ("test_timeout_s", 0, "grading.test_timeout_s", "(0, 600"),
        ("fix_paths", ["nothere.py"], "grading.fix_paths", "is not a source file"),
        ("tolerances", {"float8": {"atol": 1}}, "grading.tolerances.float8", "unknown dtype"),
        ("peak_memory", {"tests/x.py::t": 10}, "grading.peak_memory.tests/x.py::t", "is not in"),
        ("limits", {"wall_time_s": -1}, "grading.limits", "outside"),
        ("network", "host", "grading.network", "must be one of: none, loopback"),
        ("surprise", 1, "grading.surprise", "unknown key"),
    ],
)
def test_a_bad_table_names_its_field(softmax_bundle, key, value, field, words):
    with pytest.raises(GradingTableError) as error:
        parse(softmax_bundle, grading(key, value))
    assert error.value.file == "task.toml"
    assert error.value.field == field
    assert words in error.value.message


def test_a_memory_budget_cannot_be_kept_on_the_loopback_network(softmax_bundle):
    def both(manifest: dict[str, Any]) -> None:
        manifest["grading"]["network"] = "loopback"
        manifest["grading"]["peak_memory"] = {"tests/test_repro.py::test_small_scores": 10}

    with pytest.raises(GradingTableError) as error:
        parse(softmax_bundle, both)
    assert error.value.field == "grading.peak_memory"
    assert "socket buffers" in error.value.message


def test_only_tests_may_be_hidden_under_the_root(softmax_bundle):
    # Source files reach the sandboxes of visible tests, whose output is public.
    def hide_source(manifest: dict[str, Any]) -> None:
        for entry in manifest["files"]:
            if entry["path"] == "repo/softmax.py":
                entry["visibility"] = "hidden"

    with pytest.raises(GradingTableError) as error:
        parse(softmax_bundle, hide_source)
    assert error.value.field == "files"
    assert "repo/softmax.py: only tests may be hidden under repo/" in error.value.message


def test_a_test_file_that_does_not_parse_is_named(softmax_bundle):
    def broken(files: dict[str, str]) -> None:
        files["repo/tests/test_softmax_hidden.py"] = "def test_x(:\n"

    with pytest.raises(GradingTableError) as error:
        parse(softmax_bundle, files_change=broken)
    assert error.value.file == "repo/tests/test_softmax_hidden.py"
    assert "line 1" in error.value.message


def test_fixes_in_a_bundle_are_diffs(softmax_bundle):
    def rename(manifest: dict[str, Any]) -> None:
        entry = next(e for e in manifest["files"] if e["role"] == "solution")
        entry["path"] = "fix.py"

    with pytest.raises(GradingTableError, match=r"fix\.py: fixes in a bundle are unified diffs"):
        parse(softmax_bundle, rename)
