"""A solver's fix, applied to the task's source tree on the trusted side.

A fix arrives as one unified diff (a file named ``*.diff`` or ``*.patch``,
paths relative to the task's root with git's ``a/`` and ``b/`` prefixes) or as
whole replacement files named by their paths under the root. A diff is
applied by ``git apply`` in a scratch folder holding only the source files
(never the tests): no string surgery here, and git refuses paths that leave
the folder. Nothing a fix contains is executed here.

Before anything is applied, every path the fix touches is checked; a refusal
names the path:

- a test file, or anything in a folder that holds tests;
- files that change how tests or Python run: ``conftest.py``, pytest and tox
  settings, ``sitecustomize.py``/``usercustomize.py``, ``.pth`` files,
  bytecode;
- a new ``__init__.py``, or a new module or package named like one Python
  can already import (``torch.py``, ``random/``): shadowing;
- a path outside the ones the task lets a fix change (``grading.fix_paths``);
- symbolic links, mode changes to one, and binary patches.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from graders.verdicts import Verdict

from .spec import DIFF_SUFFIXES, DebugSpec

GIT_TIMEOUT_S = 10.0  # git apply runs outside the sandbox: a hostile diff gets this long
MAX_MESSAGE = 1500
RUNS_TESTS = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "setup.py",
        "pyproject.toml",
        ".pytest_cache",
        "sitecustomize.py",
        "usercustomize.py",
        "__pycache__",
    }
)


class FixRefused(Exception):
    """The fix cannot be graded as it is: ``verdict`` and a reason naming the path."""

    def __init__(self, verdict: Verdict, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


@dataclass(frozen=True)
class AppliedFix:
    tree: dict[str, str]  # the whole source tree after the fix, root-relative
    changed: tuple[str, ...]  # paths added, changed or deleted
    lines_changed: int  # lines added plus lines removed
    diff: str  # the fix as a unified diff against the task's source (for reviewers)


def apply_fix(spec: DebugSpec, submission: Mapping[str, str]) -> AppliedFix:
    """The source tree with ``submission`` applied, or ``FixRefused``."""
    if not submission:
        raise FixRefused(Verdict.COMPILE_ERROR, "the submission has no files: send a diff")
    diffs = [name for name in submission if name.endswith(DIFF_SUFFIXES)]
    if len(diffs) > 1 or (diffs and len(submission) > 1):
        raise FixRefused(
            Verdict.COMPILE_ERROR,
            "send one unified diff (a .diff or .patch file) or replacement files, not both: "
            + ", ".join(sorted(submission)),
        )
    if diffs:
        tree = _apply_diff(spec, submission[diffs[0]])
    else:
        for path in sorted(submission):
            check_path(spec, path, new=path not in spec.source)
        tree = {**spec.source, **submission}
    return _describe(spec, tree)


def check_path(spec: DebugSpec, path: str, *, new: bool) -> None:
    """Refuse a path a fix may not touch, naming it and why."""
    refuse = Verdict.INTEGRITY_VIOLATION
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or ".." in parts:
        raise FixRefused(refuse, f"{path}: not a path inside the task's source tree")
    test_folders = {str(PurePosixPath(test).parent) for test in spec.tests}
    folder = str(PurePosixPath(path).parent)
    name = parts[-1]
    if path in spec.tests or (folder in test_folders and folder != "."):
        raise FixRefused(refuse, f"{path}: a fix may not change the tests")
    if name.startswith("test_") or name.endswith("_test.py"):
        raise FixRefused(refuse, f"{path}: a fix may not add or change test files")
    if set(parts) & RUNS_TESTS or name.endswith((".pth", ".pyc")):
        raise FixRefused(refuse, f"{path}: this file changes how tests or Python run")
    if new and name == "__init__.py":
        raise FixRefused(refuse, f"{path}: a new __init__.py changes what the tests import")
    if new and _shadows(parts[0]):
        raise FixRefused(
            refuse, f"{path}: it would shadow the installed module {_module_name(parts[0])!r}"
        )
    if not spec.may_change(path):
        allowed = ", ".join(spec.fix_paths or sorted(spec.source))
        raise FixRefused(
            refuse, f"{path}: outside the files this task lets a fix change ({allowed})"
        )


def _module_name(first: str) -> str:
    return first.removesuffix(".py")


def _shadows(first: str) -> bool:
    """Whether a new top-level file or folder would hide a module Python finds already."""
    name = _module_name(first)
    if not name.isidentifier():
        return False
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return True


def run_git(args: list[str], cwd: str, diff: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": cwd,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CEILING_DIRECTORIES": str(Path(cwd).parent),
        "LC_ALL": "C",
    }
    try:
        return subprocess.run(
            ["git", "apply", *args, "-"],
            cwd=cwd,
            input=diff,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise FixRefused(
            Verdict.COMPILE_ERROR,
            f"the diff took git apply longer than {GIT_TIMEOUT_S:.0f} s to read or apply",
        ) from None


def git_message(result: subprocess.CompletedProcess[bytes]) -> str:
    text = result.stderr.decode("utf-8", "replace").strip() or "git apply failed"
    return text[:MAX_MESSAGE]


def _apply_diff(spec: DebugSpec, diff: str) -> dict[str, str]:
    data = diff.encode("utf-8", "surrogatepass")
    if b"GIT binary patch" in data or b"\nBinary files " in data:
        raise FixRefused(Verdict.INTEGRITY_VIOLATION, "binary patches are not accepted")
    with tempfile.TemporaryDirectory(prefix="benchwright-fix-") as scratch:
        work = os.path.join(scratch, "tree")
        os.mkdir(work)
        write_tree(work, spec.source)
        listed = run_git(["--numstat", "--summary", "-z"], work, data)
        if listed.returncode != 0:
            raise FixRefused(
                Verdict.COMPILE_ERROR, f"the diff cannot be read: {git_message(listed)}"
            )
        for path in touched_paths(listed.stdout):
            check_path(spec, path, new=path not in spec.source)
        applied = run_git(["--whitespace=nowarn"], work, data)
        if applied.returncode != 0:
            raise FixRefused(
                Verdict.COMPILE_ERROR, f"the diff does not apply: {git_message(applied)}"
            )
        return _read_tree(spec, work)


def touched_paths(listing: bytes) -> list[str]:
    """The paths ``git apply --numstat --summary -z`` lists, checked before anything is
    applied (a rename shows only its new name: the trees are compared afterwards); a
    symbolic link in its summary is refused here."""
    tokens = listing.decode("utf-8", "surrogateescape").split("\0")
    touched: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        fields = token.split("\t", 2)
        if len(fields) == 3 and fields[2]:
            touched.append(fields[2])
        elif len(fields) == 3:  # a rename or copy: the old and new paths follow
            touched += tokens[index : index + 2]
            index += 2
        elif "120000" in token.split():  # --summary: " create mode 120000 path", ...
            path = token.strip().rsplit(" ", 1)[-1]
            why = f"{path}: symbolic links are not accepted"
            raise FixRefused(Verdict.INTEGRITY_VIOLATION, why)
    return touched


def write_tree(root: str, files: Mapping[str, str]) -> None:
    for path, text in files.items():
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)


class TreeUnreadable(ValueError):
    """A file tree git left that cannot be read back as text: ``kind`` says why."""

    def __init__(self, kind: str, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.kind = kind  # "link" or "encoding"
        self.path = path


def read_tree(root: str) -> dict[str, str]:
    """Every file under ``root`` (relative path -> text); a symbolic link or a file
    that is not UTF-8 raises ``TreeUnreadable`` naming it."""
    tree: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        for name in [*names, *dirs]:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, root).replace(os.sep, "/")
            if os.path.islink(full):
                raise TreeUnreadable("link", relative, "symbolic links are not accepted")
            if name in dirs:
                continue
            try:
                with open(full, encoding="utf-8", newline="") as handle:
                    tree[relative] = handle.read()
            except UnicodeDecodeError:
                raise TreeUnreadable("encoding", relative, "not UTF-8 text") from None
    return tree


def _read_tree(spec: DebugSpec, root: str) -> dict[str, str]:
    try:
        tree = read_tree(root)
    except TreeUnreadable as problem:
        if problem.kind == "link":
            raise FixRefused(Verdict.INTEGRITY_VIOLATION, str(problem)) from None
        raise FixRefused(
            Verdict.COMPILE_ERROR, f"{problem.path}: the fixed file is not UTF-8 text"
        ) from None
    # What the diff did, from the trees themselves: a rename's old side, a deletion and
    # a copy are checked like any change (git's listing names only some of them).
    for path in sorted(set(tree) | set(spec.source)):
        if tree.get(path) != spec.source.get(path):
            check_path(spec, path, new=path not in spec.source)
    return tree


def _describe(spec: DebugSpec, tree: dict[str, str]) -> AppliedFix:
    changed = sorted(
        path for path in set(tree) | set(spec.source) if tree.get(path) != spec.source.get(path)
    )
    lines = 0
    chunks: list[str] = []
    for path in changed:
        before = spec.source.get(path, "").splitlines(keepends=True)
        after = tree.get(path, "").splitlines(keepends=True)
        diff = list(
            difflib.unified_diff(
                before,
                after,
                f"a/{path}" if path in spec.source else "/dev/null",
                f"b/{path}" if path in tree else "/dev/null",
            )
        )
        lines += sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))
        chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in diff))
    return AppliedFix(tree=tree, changed=tuple(changed), lines_changed=lines, diff="".join(chunks))
