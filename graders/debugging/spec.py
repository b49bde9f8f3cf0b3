"""What a debugging grading needs to know about its task, parsed from ``task.toml``.

A debugging bundle holds a codebase under one folder (``grading.root``): its
source files (role ``starter``, shown to solvers), its visible tests (role
``test``, visibility ``prompt``) and its hidden tests (role ``test``,
visibility ``hidden``). Test ids are ``path::function`` with the path relative
to the root, as in SWE-bench's ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` lists.
The expert fix and the negative fixes are unified diffs against the root.

Every error is a ``GradingTableError`` naming the file and the field. Nothing
here runs a task's code: test functions are found by parsing the test files.
"""

from __future__ import annotations

import ast
import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from graders.contract import GradingTableError
from sandboxes.base import NETWORKS, InvalidLimits, Limits, Network

GRADING_KEYS = (
    "root",
    "fail_to_pass",
    "pass_to_pass",
    "fix_paths",
    "test_timeout_s",
    "tolerances",
    "peak_memory",
    "limits",
    "network",
)
DIFF_SUFFIXES = (".diff", ".patch")
TREE_ROLES = ("starter", "test", "other")  # the roles a file under the root may have
DEFAULT_TEST_TIMEOUT_S = 60.0
MAX_TEST_TIMEOUT_S = 600.0
MAX_TESTS = 200
# Output dtypes a tolerance may be given for; others compare exactly.
TOLERANCE_DTYPES = ("float64", "float32", "float16", "bfloat16", "complex64", "complex128")
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
    "complex64": (1e-5, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# A debugging grading runs more processes than a kernel's (a test may start ranks).
DEFAULT_LIMITS = Limits(max_processes=256, wall_time_s=600.0)


@dataclass(frozen=True)
class TestId:
    path: str  # relative to the root, e.g. "tests/test_softmax.py"
    function: str

    @property
    def id(self) -> str:
        return f"{self.path}::{self.function}"

    @property
    def module(self) -> str:
        """The dotted name the runner imports the test file under."""
        return self.path.removesuffix(".py").replace("/", ".")


@dataclass(frozen=True)
class DebugSpec:
    root: str
    fail_to_pass: tuple[TestId, ...]
    pass_to_pass: tuple[TestId, ...]
    fix_paths: tuple[str, ...]  # globs relative to the root; () = the existing sources
    test_timeout_s: float
    tolerances: Mapping[str, tuple[float, float]]
    peak_memory_mib: Mapping[str, float]  # test id -> MiB over the expert fix's peak
    limits: Mapping[str, Any]
    source: Mapping[str, str] = field(repr=False)  # root-relative path -> text (no tests)
    tests: Mapping[str, str] = field(repr=False)  # root-relative test file -> text
    visible_tests: frozenset[str] = frozenset()  # test files shown to solvers
    solution: str = ""  # the bundle path of the expert fix
    # "loopback": tests may talk TCP to themselves (gloo, a TCP store) on the sandbox's
    # own loopback interface; nothing outside the sandbox is reachable either way.
    network: Network = "none"

    @property
    def all_tests(self) -> tuple[TestId, ...]:
        return (*self.fail_to_pass, *self.pass_to_pass)

    def group(self, test: TestId) -> str:
        return "fail_to_pass" if test in self.fail_to_pass else "pass_to_pass"

    def is_visible(self, test: TestId) -> bool:
        return test.path in self.visible_tests

    def may_change(self, path: str) -> bool:
        """Whether a fix may write ``path`` (relative to the root)."""
        if not self.fix_paths:
            return path in self.source
        return any(fnmatchcase(path, pattern) for pattern in self.fix_paths)

    def effective_limits(self) -> Limits:
        return DEFAULT_LIMITS.with_overrides(self.limits)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], files: Mapping[str, str]) -> DebugSpec:
        grading = manifest.get("grading")
        if not isinstance(grading, Mapping):
            raise GradingTableError("grading", "a debugging task needs a [grading] table")
        unknown = sorted(set(grading) - set(GRADING_KEYS))
        if unknown:
            raise GradingTableError(
                f"grading.{unknown[0]}", f"unknown key; known: {', '.join(GRADING_KEYS)}"
            )
        root = _root(grading)
        entries = [e for e in manifest.get("files") or [] if isinstance(e, Mapping)]
        source, tests, visible = _tree(root, entries, files)
        solution = _solution(entries)
        f2p = _test_ids(grading, "fail_to_pass", tests, required=True)
        p2p = _test_ids(grading, "pass_to_pass", tests, required=False)
        both = sorted({t.id for t in f2p} & {t.id for t in p2p})
        if both:
            raise GradingTableError("grading.pass_to_pass", f"{both[0]} is also in fail_to_pass")
        if len(f2p) + len(p2p) > MAX_TESTS:
            raise GradingTableError("grading", f"at most {MAX_TESTS} tests in all")
        limits = grading.get("limits", {})
        if not isinstance(limits, Mapping):
            raise GradingTableError("grading.limits", "must be a table")
        try:
            DEFAULT_LIMITS.with_overrides(limits)
        except InvalidLimits as error:
            raise GradingTableError("grading.limits", str(error)) from None
        ids = {t.id for t in (*f2p, *p2p)}
        network = _network(grading)
        if network == "loopback" and grading.get("peak_memory"):
            raise GradingTableError(
                "grading.peak_memory",
                'cannot be measured with network = "loopback": socket buffers are not '
                "charged to the sandbox's memory on every host",
            )
        return cls(
            root=root,
            fail_to_pass=f2p,
            pass_to_pass=p2p,
            fix_paths=_fix_paths(grading, source),
            test_timeout_s=_timeout(grading),
            tolerances=parse_tolerances(grading),
            peak_memory_mib=_peak_memory(grading, ids),
            limits=dict(limits),
            source=source,
            tests=tests,
            visible_tests=frozenset(visible),
            solution=solution,
            network=network,
        )


def _root(grading: Mapping[str, Any]) -> str:
    root = grading.get("root")
    if not isinstance(root, str) or not root:
        raise GradingTableError("grading.root", "is required: the folder holding the codebase")
    if root.startswith("/") or ".." in root.split("/") or root != posixpath.normpath(root):
        raise GradingTableError("grading.root", f"{root!r} must be a plain relative folder")
    return root


def _tree(
    root: str, entries: Sequence[Mapping[str, Any]], files: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    prefix = root.rstrip("/") + "/"
    source: dict[str, str] = {}
    tests: dict[str, str] = {}
    visible: set[str] = set()
    for entry in entries:
        path = str(entry.get("path", ""))
        if not path.startswith(prefix):
            if entry.get("role") in ("starter", "test"):
                raise GradingTableError(
                    "files", f"{path}: a {entry.get('role')} file must lie under {prefix}"
                )
            continue
        role = entry.get("role")
        if role not in TREE_ROLES:
            raise GradingTableError(
                "files", f"{path}: files under {prefix} are starter, test or other, not {role}"
            )
        relative = path[len(prefix) :]
        if role != "test" and entry.get("visibility") == "hidden":
            # Source and helpers go into every sandbox, those of visible tests too,
            # whose output solvers read: a hidden one would not stay hidden.
            raise GradingTableError(
                "files", f"{path}: only tests may be hidden under {prefix}; this is {role}"
            )
        if role == "test":
            tests[relative] = files.get(path, "")
            if entry.get("visibility") == "prompt":
                visible.add(relative)
        else:
            source[relative] = files.get(path, "")
    if not source:
        raise GradingTableError("files", f"no source files under {prefix} (role starter)")
    return source, tests, visible


def _solution(entries: Sequence[Mapping[str, Any]]) -> str:
    solutions = [str(e.get("path")) for e in entries if e.get("role") == "solution"]
    if len(solutions) != 1:
        raise GradingTableError(
            "files", "a debugging task has exactly one solution: the expert fix"
        )
    for entry in entries:
        if entry.get("role") in ("solution", "negative") and not str(entry.get("path")).endswith(
            DIFF_SUFFIXES
        ):
            raise GradingTableError(
                "files",
                f"{entry.get('path')}: fixes in a bundle are unified diffs (.diff or .patch)",
            )
    return solutions[0]


def _test_ids(
    grading: Mapping[str, Any], key: str, tests: Mapping[str, str], *, required: bool
) -> tuple[TestId, ...]:
    where = f"grading.{key}"
    value = grading.get(key, [] if not required else None)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise GradingTableError(where, "must be a list of test ids (path::function)")
    if required and not value:
        raise GradingTableError(where, "needs at least one test the fix must make pass")
    if len(set(value)) != len(value):
        raise GradingTableError(where, "lists a test twice")
    functions: dict[str, set[str]] = {}
    ids: list[TestId] = []
    for item in value:
        path, sep, function = item.partition("::")
        if not sep or not function.isidentifier():
            raise GradingTableError(where, f"{item!r} is not path::function")
        if path not in tests:
            raise GradingTableError(where, f"{item}: {path} is not a test file under the root")
        parts = path.removesuffix(".py").split("/")
        if not path.endswith(".py") or not all(part.isidentifier() for part in parts):
            raise GradingTableError(where, f"{item}: {path} must be an importable .py path")
        if path not in functions:
            functions[path] = _test_functions(f"{grading['root']}/{path}", tests[path])
        if function not in functions[path]:
            raise GradingTableError(where, f"{item}: {path} has no top-level def {function}")
        ids.append(TestId(path, function))
    return tuple(ids)


def _functions(path: str, text: str) -> list[str]:
    """The top-level functions of a test file, in source order."""
    try:
        module = ast.parse(text, filename=path)
    except SyntaxError as error:
        raise GradingTableError("", f"line {error.lineno}: {error.msg}", file=path) from None
    return [
        node.name
        for node in module.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _test_functions(path: str, text: str) -> set[str]:
    return set(_functions(path, text))


def test_functions(path: str, text: str) -> list[str]:
    """The functions of a test file that look like tests (``test*``), in source order,
    for an author to pick from; ``GradingTableError`` naming the file when it does not
    parse. Any top-level function may be named in the table."""
    return [name for name in _functions(path, text) if name.startswith("test")]


def _fix_paths(grading: Mapping[str, Any], source: Mapping[str, str]) -> tuple[str, ...]:
    value = grading.get("fix_paths", [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise GradingTableError("grading.fix_paths", "must be a list of paths or globs")
    for pattern in value:
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise GradingTableError("grading.fix_paths", f"{pattern!r} must be relative")
        if not any(fnmatchcase(path, pattern) for path in source) and "*" not in pattern:
            raise GradingTableError("grading.fix_paths", f"{pattern!r} is not a source file")
    return tuple(value)


def _network(grading: Mapping[str, Any]) -> Network:
    value = grading.get("network", "none")
    for network in NETWORKS:
        if value == network:
            return network
    raise GradingTableError("grading.network", f"must be one of: {', '.join(NETWORKS)}")


def _timeout(grading: Mapping[str, Any]) -> float:
    value = grading.get("test_timeout_s", DEFAULT_TEST_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GradingTableError("grading.test_timeout_s", "must be a number of seconds")
    if not 0 < value <= MAX_TEST_TIMEOUT_S:
        raise GradingTableError("grading.test_timeout_s", f"must lie in (0, {MAX_TEST_TIMEOUT_S}]")
    return float(value)


def parse_tolerances(grading: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """``[grading.tolerances]``: dtype -> (atol, rtol), over the defaults (the
    debugging and the re-profile form of the profiling kind share it)."""
    table = grading.get("tolerances", {})
    if not isinstance(table, Mapping):
        raise GradingTableError("grading.tolerances", "must be a table of dtype = {atol, rtol}")
    tolerances = dict(DEFAULT_TOLERANCES)
    for dtype, entry in table.items():
        where = f"grading.tolerances.{dtype}"
        if dtype not in TOLERANCE_DTYPES:
            raise GradingTableError(where, f"unknown dtype; known: {', '.join(TOLERANCE_DTYPES)}")
        if not isinstance(entry, Mapping) or set(entry) - {"atol", "rtol"}:
            raise GradingTableError(where, "must be {atol = ..., rtol = ...}")
        bounds = []
        for key in ("atol", "rtol"):
            number = entry.get(key, tolerances[dtype][0 if key == "atol" else 1])
            if (
                isinstance(number, bool)
                or not isinstance(number, int | float)
                or not math.isfinite(number)
                or number < 0
            ):
                raise GradingTableError(f"{where}.{key}", "must be a non-negative number")
            bounds.append(float(number))
        tolerances[dtype] = (bounds[0], bounds[1])
    return tolerances


def _peak_memory(grading: Mapping[str, Any], ids: set[str]) -> dict[str, float]:
    table = grading.get("peak_memory", {})
    if not isinstance(table, Mapping):
        raise GradingTableError("grading.peak_memory", "must be a table of test id = MiB")
    checked: dict[str, float] = {}
    for test, mib in table.items():
        where = f"grading.peak_memory.{test}"
        if test not in ids:
            raise GradingTableError(where, "is not in fail_to_pass or pass_to_pass")
        if isinstance(mib, bool) or not isinstance(mib, int | float) or not mib > 0:
            raise GradingTableError(where, "must be a positive number of MiB")
        checked[test] = float(mib)
    return checked
