"""Applying a fix: git apply on the trusted side, and every path checked first. A
refusal names the path and why; nothing here runs the fix's code."""

from __future__ import annotations

import dataclasses

import pytest

from graders.debugging import fix as fix_module
from graders.debugging.fix import FixRefused, apply_fix
from graders.verdicts import Verdict

from .conftest import make_diff

SOURCE_PATH = "softmax.py"


def source(spec) -> str:
    return spec.source[SOURCE_PATH]


def refused(spec, submission) -> FixRefused:
    with pytest.raises(FixRefused) as error:
        apply_fix(spec, submission)
    return error.value


def test_the_expert_diff_applies_and_is_counted(softmax_spec, softmax_bundle):
    diff = next(f.text for f in softmax_bundle.files if f.path == "fix.diff")
    fixed = apply_fix(softmax_spec, {"fix.diff": diff})
    assert fixed.changed == ("softmax.py",)
    assert "amax" in fixed.tree["softmax.py"]
    assert fixed.lines_changed == 5  # one line out, four in
    assert "+    shifted = logits - logits.amax" in fixed.diff


def test_replacement_files_are_taken_whole(softmax_spec):
    new = source(softmax_spec).replace("torch.exp(logits)", "torch.exp(logits - logits.max())")
    fixed = apply_fix(softmax_spec, {"softmax.py": new})
    assert fixed.tree["softmax.py"] == new and fixed.lines_changed == 2


def test_a_diff_that_does_not_apply_is_a_compile_error(softmax_spec):
    stale = make_diff("softmax.py", "def gone():\n    pass\n", "def gone():\n    return 1\n")
    error = refused(softmax_spec, {"fix.patch": stale})
    assert error.verdict == Verdict.COMPILE_ERROR
    assert "does not apply" in error.reason and "softmax.py" in error.reason


def test_garbage_is_a_compile_error(softmax_spec):
    error = refused(softmax_spec, {"fix.diff": "this is not a diff\n"})
    assert error.verdict == Verdict.COMPILE_ERROR


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("conftest.py", "changes how tests or Python run"),
        ("pytest.ini", "changes how tests or Python run"),
        ("sitecustomize.py", "changes how tests or Python run"),
        ("evil.pth", "changes how tests or Python run"),
        ("tests/test_repro.py", "may not change the tests"),
        ("tests/helper.py", "may not change the tests"),
        ("test_extra.py", "may not add or change test files"),
        ("torch.py", "shadow the installed module 'torch'"),
        ("json/decoder.py", "shadow the installed module 'json'"),
        ("pkg/__init__.py", "a new __init__.py"),
        ("helpers.py", "outside the files this task lets a fix change"),
    ],
)
def test_a_new_file_that_games_the_tests_is_refused_by_name(softmax_spec, path, words):
    diff = make_diff(path, "", "x = 1\n")
    error = refused(softmax_spec, {"fix.diff": diff})
    assert error.verdict == Verdict.INTEGRITY_VIOLATION
    assert error.reason.startswith(f"{path}: ")
    assert words in error.reason
    # The same file sent whole is refused the same way.
    assert refused(softmax_spec, {path: "x = 1\n"}).reason == error.reason


def test_a_diff_that_edits_a_test_is_refused_before_anything_is_applied(softmax_spec):
    test = softmax_spec.tests["tests/test_repro.py"]
    diff = make_diff("tests/test_repro.py", test, test.replace("assert", "pass  #"))
    error = refused(softmax_spec, {"fix.diff": diff})
    assert error.reason.startswith("tests/test_repro.py: a fix may not change the tests")


def test_a_rename_into_the_tests_is_refused(softmax_spec):
    rename = (
        "diff --git a/softmax.py b/tests/conftest.py\n"
        "similarity index 100%\n"
        "rename from softmax.py\n"
        "rename to tests/conftest.py\n"
    )
    error = refused(softmax_spec, {"fix.diff": rename})
    assert error.verdict == Verdict.INTEGRITY_VIOLATION and "tests/conftest.py" in error.reason


def test_a_symlink_is_refused(softmax_spec):
    link = (
        "diff --git a/link.py b/link.py\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        "+++ b/link.py\n"
        "@@ -0,0 +1 @@\n"
        "+/etc/passwd\n"
        "\\ No newline at end of file\n"
    )
    error = refused(softmax_spec, {"fix.diff": link})
    assert error.verdict == Verdict.INTEGRITY_VIOLATION and "symbolic links" in error.reason


def test_a_path_leaving_the_tree_is_refused(softmax_spec):
    escape = make_diff("../outside.py", "", "x = 1\n")
    error = refused(softmax_spec, {"fix.diff": escape})
    assert error.verdict in (Verdict.INTEGRITY_VIOLATION, Verdict.COMPILE_ERROR)
    assert "outside.py" in error.reason


def test_a_binary_patch_is_refused(softmax_spec):
    binary = "diff --git a/softmax.py b/softmax.py\nGIT binary patch\nliteral 0\n"
    error = refused(softmax_spec, {"fix.diff": binary})
    assert error.verdict == Verdict.INTEGRITY_VIOLATION


def test_a_diff_and_files_together_or_two_diffs_are_refused(softmax_spec):
    error = refused(softmax_spec, {"a.diff": "", "b.diff": ""})
    assert error.verdict == Verdict.COMPILE_ERROR and "one unified diff" in error.reason
    assert refused(softmax_spec, {}).verdict == Verdict.COMPILE_ERROR


def test_a_rename_that_deletes_a_protected_file_is_refused(softmax_spec):
    # git's listing names only a rename's new side: the trees themselves are compared.
    spec = dataclasses.replace(
        softmax_spec, source={**softmax_spec.source, "helpers.py": "def helper():\n    pass\n"}
    )
    swap = (
        "diff --git a/softmax.py b/softmax.py\n"
        "deleted file mode 100644\n"
        + make_diff("softmax.py", spec.source["softmax.py"], "").split("\n", 2)[2]
        + "diff --git a/helpers.py b/softmax.py\n"
        "similarity index 100%\n"
        "rename from helpers.py\n"
        "rename to softmax.py\n"
    )
    error = refused(spec, {"fix.diff": swap})
    assert error.verdict == Verdict.INTEGRITY_VIOLATION
    assert error.reason.startswith("helpers.py: outside the files this task lets a fix change")


def test_a_diff_that_keeps_git_busy_is_cut_off_as_a_compile_error(softmax_spec, monkeypatch):
    # A hostile diff can keep git apply busy for a long time (hunks of blank context
    # that match nowhere); past the limit the fix is refused, never the grader's crash.
    monkeypatch.setattr(fix_module, "GIT_TIMEOUT_S", 1e-4)
    grow = make_diff("softmax.py", source(softmax_spec), source(softmax_spec) + "\n" * 50_000)
    error = refused(softmax_spec, {"fix.diff": grow})
    assert error.verdict == Verdict.COMPILE_ERROR
    assert "longer than" in error.reason
