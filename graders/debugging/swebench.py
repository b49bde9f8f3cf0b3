"""SWE-bench instances for debugging bundles, both ways (docs/bundles.md, "SWE-bench
interchange").

A SWE-bench instance describes a bug by the repository it lives in (``repo`` at
``base_commit``), the issue (``problem_statement``), the expert fix (``patch``),
the tests that show it, as a diff adding them (``test_patch``), and the test ids
the fix must make pass (``FAIL_TO_PASS``) and must keep passing
(``PASS_TO_PASS``). A debugging bundle holds the same things, with the
repository itself in the bundle, so:

- ``instance_from_bundle`` turns a bundle into an instance. Its ``snapshot``
  field (root-relative path -> text) carries the source files: an instance
  points at a git repository, and a bundle's codebase has none.
  ``base_commit`` is then :func:`snapshot_hash` of that snapshot, and ``repo``
  is ``benchwright/<slug>``. The instance holds the hidden tests (in
  ``test_patch``) and the expert fix: it is for operators, never for solvers.
- ``bundle_from_instance`` turns an instance (and its snapshot) back into a
  bundle: the test files are those ``test_patch`` adds (or changes) when
  ``git apply`` applies it to the snapshot, the fix may change the files
  ``patch`` touches, and every test is hidden unless named as visible.

What a bundle has and SWE-bench has no field for travels in an extra
``benchwright`` object (title, difficulty, tags, hardware, which tests are
visible, and the grading settings: time limit, network, tolerances, peak
memory, limits), so bundle -> instance -> bundle keeps them. An imported
bundle keeps the instance's own identifying fields (``instance_id``, ``repo``,
``base_commit``, ``created_at``, ``version``, ``hints_text``) in a hidden
``swebench.json``, so instance -> bundle -> instance gives them back as they
were. Negative fixes, the rubric and files outside the root have no SWE-bench
form and are not exported.

Tests differ in one way no field can carry: a bundle's test returns the values
it checks and is compared with the expert fix's (docs/bundles.md, "Tests"). A
SWE-bench test that only asserts imports, but validation reports it as a task
error. Every problem with an instance raises :class:`InstanceError` naming the
field; a bundle that cannot be exported raises ``GradingTableError`` naming the
file and field, as the bundle checks do.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import posixpath
import re
import tempfile
from collections.abc import Collection, Mapping
from typing import Any

from graders.contract import GradingTableError

from .fix import (
    FixRefused,
    TreeUnreadable,
    git_message,
    read_tree,
    run_git,
    touched_paths,
    write_tree,
)
from .spec import DebugSpec

ROOT = "repo"  # where an imported bundle keeps the codebase
STATEMENT = "statement.md"
FIX = "fix.diff"
PROVENANCE = "swebench.json"  # an imported instance's identifying fields, as given
PROVENANCE_FIELDS = ("instance_id", "repo", "base_commit", "created_at", "version", "hints_text")
EXTRA = "benchwright"
EXTRA_KEYS = ("title", "difficulty", "tags", "hardware", "visible_tests", "grading")
# The [grading] settings an instance carries in its extra object; the root, the test
# lists and fix_paths come from the instance's own fields.
CARRIED_GRADING = ("test_timeout_s", "network", "tolerances", "peak_memory", "limits")
DEFAULT_VERSION = "1"
DEFAULT_TAGS = ("swebench",)
# What a bundle requires of a slug and a title (tasks.bundle checks them again).
SLUG_RE = re.compile(r"[a-z0-9-]{3,80}")
MAX_TITLE_CHARS = 200
# Characters git would quote in a diff header: such paths are refused, not quoted.
_NEEDS_QUOTING = re.compile(r'[\s"\\\x00-\x1f\x7f]')


class InstanceError(ValueError):
    """A SWE-bench instance that cannot become a bundle; ``field`` names the field at
    fault (``test_patch``, ``FAIL_TO_PASS``, ``snapshot``, ``benchwright.grading``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# --- bundle -> instance ------------------------------------------------------------------------


def snapshot_hash(snapshot: Mapping[str, str]) -> str:
    """A stable stand-in for a commit id: the SHA-1 (40 hex digits) over the files in
    path order, each as its path, a NUL byte, its length in UTF-8 bytes, a NUL byte
    and its UTF-8 bytes. Equal snapshots hash equal wherever they are exported."""
    digest = hashlib.sha1(usedforsecurity=False)
    for path in sorted(snapshot):
        data = snapshot[path].encode("utf-8", "surrogatepass")
        digest.update(path.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def patch_adding(tests: Mapping[str, str]) -> str:
    """A git-style unified diff that adds every file of ``tests`` (root-relative path ->
    text) to a tree without them, in path order, ``/dev/null`` as each old side."""
    return "".join(_added_file(path, tests[path]) for path in sorted(tests))


def _added_file(path: str, text: str) -> str:
    if _NEEDS_QUOTING.search(path):
        raise GradingTableError("files", f"{path}: a test path git would quote (space, quote)")
    header = f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
    if not text:
        return header  # git adds an empty file from the header alone
    lines = text.split("\n")
    ends_in_newline = lines[-1] == ""
    if ends_in_newline:
        lines.pop()
    count = f"+1,{len(lines)}" if len(lines) != 1 else "+1"
    body = "".join(f"+{line}\n" for line in lines)
    if not ends_in_newline:
        body += "\\ No newline at end of file\n"
    return f"{header}--- /dev/null\n+++ b/{path}\n@@ -0,0 {count} @@\n{body}"


def instance_from_bundle(
    manifest: Mapping[str, Any], files: Mapping[str, str], *, created_at: str | None = None
) -> dict[str, Any]:
    """The SWE-bench instance of a debugging bundle (its ``task.toml`` and files, as
    ``graders.files.read_bundle`` returns them). ``created_at`` defaults to now (UTC);
    a bundle imported from an instance gives back that instance's identifying fields.

    The instance holds the hidden tests and the expert fix: it is for operators."""
    kind = manifest.get("kind")
    if kind != "debugging":
        raise GradingTableError(
            "kind", f"is {kind!r}: only debugging bundles have a SWE-bench instance"
        )
    spec = DebugSpec.from_manifest(manifest, files)
    slug = manifest.get("slug")
    if not isinstance(slug, str) or not slug:
        raise GradingTableError("slug", "is required")
    statement = manifest.get("statement")
    if not isinstance(statement, str) or statement not in files:
        raise GradingTableError("statement", "must name a listed file")
    grading = manifest["grading"]
    snapshot = {path: spec.source[path] for path in sorted(spec.source)}
    given = _provenance(files)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "instance_id": given.get("instance_id", slug),
        "repo": given.get("repo", f"benchwright/{slug}"),
        "base_commit": given.get("base_commit", snapshot_hash(snapshot)),
        "problem_statement": files[statement],
        "hints_text": given.get("hints_text", ""),
        "created_at": given.get("created_at", created_at or now),
        "patch": files[spec.solution],
        "test_patch": patch_adding(spec.tests),
        "FAIL_TO_PASS": list(grading["fail_to_pass"]),
        "PASS_TO_PASS": list(grading.get("pass_to_pass", [])),
        "version": given.get("version", DEFAULT_VERSION),
        "snapshot": snapshot,
        EXTRA: _extra_of(manifest, spec),
    }


def _provenance(files: Mapping[str, str]) -> dict[str, str]:
    if PROVENANCE not in files:
        return {}
    try:
        given = json.loads(files[PROVENANCE])
    except json.JSONDecodeError as error:
        raise GradingTableError("", f"not valid JSON: {error}", file=PROVENANCE) from None
    if not isinstance(given, dict):
        raise GradingTableError("", "must be a JSON object", file=PROVENANCE)
    for key, value in given.items():
        if key not in PROVENANCE_FIELDS or not isinstance(value, str):
            raise GradingTableError(
                key,
                f"unknown, or not a string; known: {', '.join(PROVENANCE_FIELDS)}",
                file=PROVENANCE,
            )
    return given


def _extra_of(manifest: Mapping[str, Any], spec: DebugSpec) -> dict[str, Any]:
    extra: dict[str, Any] = {
        key: manifest[key] for key in ("title", "difficulty", "tags", "hardware") if key in manifest
    }
    extra["visible_tests"] = sorted(spec.visible_tests)
    grading = manifest["grading"]
    carried = {key: grading[key] for key in CARRIED_GRADING if key in grading}
    if carried:
        extra["grading"] = carried
    return extra


# --- instance -> bundle ------------------------------------------------------------------------


def bundle_from_instance(
    instance: Mapping[str, Any],
    *,
    snapshot: Mapping[str, str] | None = None,
    visible_tests: Collection[str] = (),
) -> tuple[dict[str, Any], dict[str, str]]:
    """A debugging bundle (its manifest, and its files by path without ``task.toml``)
    from a SWE-bench instance. ``snapshot`` (root-relative path -> text) is the
    repository at ``base_commit``, without the tests; without it, the instance's own
    ``snapshot`` field. ``visible_tests`` are the test files (root-relative) shown to
    solvers; without them, those the instance's ``benchwright`` object names; every
    other test is hidden.

    Source files lie under ``repo/``: a file in a folder that holds tests is a test
    helper (role ``other``), every other one ``starter``. The fix may change the files
    ``patch`` touches. Raises :class:`InstanceError` naming the field at fault."""
    if not isinstance(instance, Mapping):
        raise InstanceError("instance", "must be a JSON object")
    instance_id = _text(instance, "instance_id")
    slug = _slug(instance_id)
    statement = _text(instance, "problem_statement")
    fix = _text(instance, "patch")
    adds_tests = _text(instance, "test_patch")
    fail_to_pass = _test_ids(instance, "FAIL_TO_PASS", required=True)
    pass_to_pass = _test_ids(instance, "PASS_TO_PASS", required=False)
    given = {key: _text(instance, key, empty=True) for key in PROVENANCE_FIELDS if key in instance}
    extra = _extra(instance.get(EXTRA, {}))
    tree = _snapshot(instance.get("snapshot") if snapshot is None else snapshot)

    with_tests, _ = _apply(tree, adds_tests, "test_patch")
    removed = sorted(set(tree) - set(with_tests))
    if removed:
        raise InstanceError("test_patch", f"deletes {removed[0]}: a test patch adds tests")
    tests = {path: text for path, text in with_tests.items() if tree.get(path) != text}
    if not tests:
        raise InstanceError("test_patch", "adds no test files to the snapshot")
    source = {path: text for path, text in tree.items() if path not in tests}
    if not source:
        raise InstanceError("snapshot", "has no source files besides the tests")
    fixed, touched = _apply(source, fix, "patch")
    if fixed == source:
        raise InstanceError("patch", "changes nothing in the snapshot")
    for path in touched:
        if path not in source:
            raise InstanceError(
                "patch", f"creates or renames to {path}: the fix changes existing source files"
            )
    for key, ids in (("FAIL_TO_PASS", fail_to_pass), ("PASS_TO_PASS", pass_to_pass)):
        for test in ids:
            path = test.partition("::")[0]
            if path not in tests:
                raise InstanceError(key, f"{test}: {path} is not a file the test_patch creates")
    where = "visible_tests" if visible_tests else f"{EXTRA}.visible_tests"
    visible = sorted(visible_tests or extra.get("visible_tests", []))
    for path in visible:
        if path not in tests:
            raise InstanceError(where, f"{path} is not a test file the test_patch creates")

    test_folders = {posixpath.dirname(path) for path in tests} - {""}
    entries: list[dict[str, Any]] = [
        {"path": STATEMENT, "visibility": "prompt", "role": "statement"}
    ]
    for path in sorted(source):
        helper = posixpath.dirname(path) in test_folders
        role = "other" if helper else "starter"
        entries.append({"path": f"{ROOT}/{path}", "visibility": "prompt", "role": role})
    for path in sorted(tests):
        seen = "prompt" if path in visible else "hidden"
        entries.append({"path": f"{ROOT}/{path}", "visibility": seen, "role": "test"})
    entries.append({"path": FIX, "visibility": "hidden", "role": "solution"})
    files = {
        STATEMENT: statement,
        **{f"{ROOT}/{path}": text for path, text in source.items()},
        **{f"{ROOT}/{path}": text for path, text in tests.items()},
        FIX: fix,
    }
    if given:
        entries.append({"path": PROVENANCE, "visibility": "hidden", "role": "other"})
        files[PROVENANCE] = json.dumps(given, indent=2, ensure_ascii=False) + "\n"
    manifest: dict[str, Any] = {
        "slug": slug,
        "title": extra.get("title") or _title(statement, instance_id),
        "kind": "debugging",
        "difficulty": extra.get("difficulty", "medium"),
        "tags": list(extra.get("tags", DEFAULT_TAGS)),
        "hardware": extra.get("hardware", "cpu"),
        "statement": STATEMENT,
        "grading": {
            "root": ROOT,
            "fix_paths": list(dict.fromkeys(touched)),
            "fail_to_pass": fail_to_pass,
            "pass_to_pass": pass_to_pass,
            **extra.get("grading", {}),
        },
        "files": entries,
    }
    _check(manifest, files)
    return manifest, files


def _text(instance: Mapping[str, Any], field: str, *, empty: bool = False) -> str:
    if field not in instance or instance[field] is None:
        raise InstanceError(field, "missing")
    value = instance[field]
    if not isinstance(value, str):
        raise InstanceError(field, "must be a string")
    if not empty and not value.strip():
        raise InstanceError(field, "must not be empty")
    if "\x00" in value:
        raise InstanceError(field, "contains a NUL character")
    return value


def _slug(instance_id: str) -> str:
    """The instance id if it is a slug already, else it lowercased with every run of
    other characters a hyphen (``django__django-11099`` -> ``django-django-11099``)."""
    if SLUG_RE.fullmatch(instance_id):
        return instance_id
    slug = re.sub(r"[^a-z0-9]+", "-", instance_id.lower()).strip("-")[:80].strip("-")
    if not SLUG_RE.fullmatch(slug):
        raise InstanceError("instance_id", f"{instance_id!r} gives no slug of 3 to 80 a-z, 0-9, -")
    return slug


def _title(statement: str, instance_id: str) -> str:
    """The statement's first non-empty line, without a Markdown heading's ``#``."""
    for line in statement.splitlines():
        title = line.strip().lstrip("#").strip()
        if title:
            return title[:MAX_TITLE_CHARS].rstrip()
    return instance_id[:MAX_TITLE_CHARS]


def _test_ids(instance: Mapping[str, Any], field: str, *, required: bool) -> list[str]:
    """A list of ``path::function`` ids, given as a list or, as the SWE-bench dataset
    stores them, as a JSON string holding one."""
    if field not in instance:
        raise InstanceError(field, "missing")
    value = instance[field]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise InstanceError(field, "must be a list of test ids, or one as JSON") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InstanceError(field, "must be a list of test ids (path::function)")
    if required and not value:
        raise InstanceError(field, "needs at least one test the fix makes pass")
    for item in value:
        path, sep, function = item.partition("::")
        if not path or not sep or not function.isidentifier():
            raise InstanceError(field, f"{item!r} is not path::function")
    return list(value)


def _extra(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InstanceError(EXTRA, "must be an object")
    unknown = sorted(set(value) - set(EXTRA_KEYS))
    if unknown:
        raise InstanceError(f"{EXTRA}.{unknown[0]}", f"unknown; known: {', '.join(EXTRA_KEYS)}")
    for key in ("title", "difficulty", "hardware"):
        if key in value and (not isinstance(value[key], str) or not value[key].strip()):
            raise InstanceError(f"{EXTRA}.{key}", "must be a non-empty string")
    for key in ("tags", "visible_tests"):
        items = value.get(key, [])
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise InstanceError(f"{EXTRA}.{key}", "must be a list of strings")
    grading = value.get("grading", {})
    if not isinstance(grading, Mapping):
        raise InstanceError(f"{EXTRA}.grading", "must be an object")
    unknown = sorted(set(grading) - set(CARRIED_GRADING))
    if unknown:
        raise InstanceError(
            f"{EXTRA}.grading.{unknown[0]}", f"unknown; known: {', '.join(CARRIED_GRADING)}"
        )
    return dict(value)


def _snapshot(value: Any) -> dict[str, str]:
    if value is None:
        raise InstanceError("snapshot", "missing: the repository's files (path -> text)")
    if not isinstance(value, Mapping) or not value:
        raise InstanceError("snapshot", "must map each file's path to its text")
    for path, text in value.items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise InstanceError("snapshot", f"{path!r}: paths and texts must be strings")
        parts = path.split("/")
        if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise InstanceError("snapshot", f"{path!r}: not a plain relative path ('..', '/')")
        if "\\" in path or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
            raise InstanceError("snapshot", f"{path!r}: a backslash or control character")
        if ".git" in path.lower().split("/"):
            raise InstanceError("snapshot", f"{path!r}: a .git folder is not part of a snapshot")
        if "\x00" in text:
            raise InstanceError("snapshot", f"{path}: contains a NUL character")
    return dict(value)


def _apply(tree: Mapping[str, str], diff: str, field: str) -> tuple[dict[str, str], list[str]]:
    """``tree`` with ``diff`` applied by ``git apply`` in a scratch folder, and the paths
    the diff touches (``graders.debugging.fix`` applies a solver's fix the same way)."""
    data = diff.encode("utf-8", "surrogatepass")
    if b"GIT binary patch" in data or b"\nBinary files " in data:
        raise InstanceError(field, "binary patches are not accepted")
    with tempfile.TemporaryDirectory(prefix="benchwright-swebench-") as scratch:
        work = os.path.join(scratch, "tree")
        os.mkdir(work)
        try:
            write_tree(work, tree)
        except OSError as error:
            raise InstanceError("snapshot", f"cannot be written out: {error}") from None
        try:
            listed = run_git(["--numstat", "--summary", "-z"], work, data)
            if listed.returncode != 0:
                raise InstanceError(field, f"cannot be read: {git_message(listed)}")
            touched = touched_paths(listed.stdout)
            applied = run_git(["--whitespace=nowarn"], work, data)
        except FixRefused as refused:
            raise InstanceError(field, refused.reason) from None
        if applied.returncode != 0:
            raise InstanceError(field, f"does not apply to the snapshot: {git_message(applied)}")
        return _read_tree(work, field), touched


def _read_tree(root: str, field: str) -> dict[str, str]:
    try:
        return read_tree(root)
    except TreeUnreadable as problem:
        raise InstanceError(field, str(problem)) from None


def _check(manifest: dict[str, Any], files: Mapping[str, str]) -> None:
    """The debugging kind's own check of the result, its errors named by the instance
    field they come from."""
    try:
        DebugSpec.from_manifest(manifest, files)
    except GradingTableError as error:
        prefix = f"{ROOT}/"
        if error.file.startswith(prefix):
            where = error.file[len(prefix) :]
            raise InstanceError("test_patch", f"{where}: {error.message}") from None
        field = {
            "grading.fail_to_pass": "FAIL_TO_PASS",
            "grading.pass_to_pass": "PASS_TO_PASS",
        }.get(error.field)
        if field is None and error.field.startswith("grading."):
            field = f"{EXTRA}.{error.field}"
        raise InstanceError(field or "instance", f"{error.field}: {error.message}") from None
