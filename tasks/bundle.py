"""Task bundles (docs/bundles.md): read a bundle and check every rule of the format.

Pure: no database. ``load_bundle(folder)`` reads a folder, ``parse_bundle(files,
name=...)`` takes its files in memory (path -> bytes, ``task.toml`` included).
Both return a :class:`Bundle` or raise :class:`BundleInvalid` carrying *every*
:class:`BundleError` found, each naming the file and the dotted field at fault,
so an author fixes a bundle in one pass.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from graders import registry
from graders.contract import GradingTableError, RuleType, TaskKind
from graders.filetext import GZIP_MAGIC, is_binary, stored_text
from graders.verdicts import NOT_THE_SUBMISSIONS, Verdict

MANIFEST = "task.toml"
MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 200
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_PATH_CHARS = 255
MAX_TITLE_CHARS = 200
MAX_TAG_CHARS = 50
# Caches a bundle may carry on disk that are never content (Python bytecode).
IGNORED_DIRS = frozenset({"__pycache__"})

SLUG_RE = re.compile(r"[a-z0-9-]{3,80}")
# Stable criterion ids; a dot is allowed so tiers read naturally ("speedup-1.5x").
CRITERION_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,59}")

DIFFICULTIES = ("easy", "medium", "hard")
HARDWARE = ("cpu", "h100", "h200", "b200", "mi300x", "a100", "l40s")
VISIBILITIES = ("prompt", "hidden")
ROLES = ("statement", "reference", "solution", "negative", "test", "starter", "artifact", "other")
# A solver must never see these, whatever the manifest says.
ALWAYS_HIDDEN_ROLES = frozenset({"solution", "negative"})
CRITERION_KINDS = ("automatic", "human")

TOP_KEYS = (
    "slug",
    "title",
    "kind",
    "difficulty",
    "tags",
    "hardware",
    "statement",
    "grading",
    "files",
    "rubric",
)
FILE_KEYS = ("path", "visibility", "role", "expected_verdict", "note")
CRITERION_KEYS = ("id", "title", "description", "points", "kind", "rule", "levels")
LEVEL_KEYS = ("score", "descriptor")


class BundleError(Exception):
    """One problem in a bundle: ``path`` is the file (``row-softmax/task.toml``),
    ``field`` the dotted field in it (``files[2].visibility``; empty when the
    whole file is at fault)."""

    def __init__(
        self,
        path: str,
        field: str,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(path, field, message)
        self.path = path
        self.field = field
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = f"{self.path}: {self.field}" if self.field else self.path
        return f"{where}: {self.message}"


class BundleInvalid(Exception):
    """A bundle was refused; ``errors`` lists every problem found."""

    def __init__(self, errors: list[BundleError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


@dataclass(frozen=True)
class BundleFile:
    path: str
    data: bytes
    visibility: str
    role: str
    expected_verdict: str = ""
    note: str = ""

    @property
    def text(self) -> str:
        """The file as the platform stores it: UTF-8 text, or base64 for a gzip file
        (``graders.filetext``)."""
        return stored_text(self.path, self.data)


@dataclass(frozen=True)
class BundleCriterion:
    key: str
    title: str
    points: int
    kind: str
    description: str = ""
    rule: dict[str, Any] = field(default_factory=dict)
    levels: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Bundle:
    """A checked bundle. ``manifest_text`` is task.toml exactly as read."""

    name: str
    manifest_text: str
    manifest: dict[str, Any]
    slug: str
    title: str
    kind: str
    difficulty: str
    tags: tuple[str, ...]
    hardware: str
    statement: str
    grading: dict[str, Any]
    files: tuple[BundleFile, ...]
    criteria: tuple[BundleCriterion, ...] | None  # None: the bundle has no [rubric]

    @property
    def statement_text(self) -> str:
        return next(f.text for f in self.files if f.path == self.statement)

    def file_data(self) -> dict[str, bytes]:
        return {f.path: f.data for f in self.files}

    def hash_manifest(self) -> dict[str, Any]:
        """The manifest in the shape ``tasks.services.draft_manifest`` gives the
        imported draft, so ``content_hash(hash_manifest(), file_data())`` is the
        hash of the version this bundle freezes into."""
        manifest: dict[str, Any] = {
            "slug": self.slug,
            "title": self.title,
            "kind": self.kind,
            "difficulty": self.difficulty,
            "tags": list(self.tags),
            "hardware": self.hardware,
            "statement": self.statement,
        }
        if self.grading:
            manifest["grading"] = self.grading
        manifest["files"] = [file_entry(f) for f in sorted(self.files, key=lambda f: f.path)]
        if self.criteria is not None:
            manifest["rubric"] = {"criteria": [criterion_entry(c) for c in self.criteria]}
        return manifest


class _FileLike(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def visibility(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def expected_verdict(self) -> str: ...

    @property
    def note(self) -> str: ...


class _CriterionLike(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def points(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def rule(self) -> Any: ...

    @property
    def levels(self) -> Any: ...


def file_entry(f: _FileLike) -> dict[str, Any]:
    """A ``[[files]]`` entry. Bundles and drafts share it, so both hash the same way."""
    entry: dict[str, Any] = {"path": f.path, "visibility": f.visibility, "role": f.role}
    if f.expected_verdict:
        entry["expected_verdict"] = f.expected_verdict
    if f.note:
        entry["note"] = f.note
    return entry


def criterion_entry(c: _CriterionLike) -> dict[str, Any]:
    """A ``[[rubric.criteria]]`` entry, shared by bundles and drafts like ``file_entry``."""
    entry: dict[str, Any] = {"id": c.key, "title": c.title}
    if c.description:
        entry["description"] = c.description
    entry["points"] = c.points
    entry["kind"] = c.kind
    if c.rule:
        entry["rule"] = c.rule
    if c.levels:
        entry["levels"] = c.levels
    return entry


# --- reading -----------------------------------------------------------------------------------


def load_bundle(folder: str | os.PathLike[str]) -> Bundle:
    """Read and check the bundle in ``folder``; its name in errors is the folder's name."""
    root = Path(folder)
    name = root.resolve().name
    if not root.is_dir():
        raise BundleInvalid([BundleError(name, "", "not a folder")])
    problems = _Problems(name)
    files = _read_tree(root, problems)
    if files is None:  # too many files: the rest was not read, so checking it would mislead
        raise BundleInvalid(problems.errors)
    return _parse(files, problems)


def parse_bundle(files: Mapping[str, bytes], *, name: str, grading: bool = True) -> Bundle:
    """Check a bundle given as its files (relative path -> bytes, task.toml included).
    ``grading=False`` leaves out the kind's check of the ``[grading]`` table (for
    checking a draft's metadata, files or rubric alone)."""
    return _parse(dict(files), _Problems(name), grading=grading)


def path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe relative path for a bundle file, or None."""
    if not path:
        return "is empty"
    if len(path) > MAX_PATH_CHARS:
        return f"is longer than {MAX_PATH_CHARS} characters"
    if any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in path):
        return "contains a control character"
    if "\\" in path:
        return "contains a backslash; separate folders with /"
    if path.startswith("/"):
        return "is absolute; paths are relative to the bundle folder"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' component"
    if path == MANIFEST:
        return f"names the manifest; {MANIFEST} is not listed in [[files]]"
    return None


class _Problems:
    def __init__(self, name: str) -> None:
        self.name = name
        self.errors: list[BundleError] = []

    def add(self, file: str, field: str, message: str, **position: int | None) -> None:
        path = f"{self.name}/{file}" if file else self.name
        self.errors.append(BundleError(path, field, message, **position))

    def manifest(self, field: str, message: str) -> None:
        self.add(MANIFEST, field, message)


def _read_tree(root: Path, problems: _Problems) -> dict[str, bytes] | None:
    """Every regular file under ``root`` (path -> bytes, at most the cap + 1 byte each);
    None when there are too many to read."""
    files: dict[str, bytes] = {}
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            rel = Path(entry.path).relative_to(root).as_posix()
            if entry.is_symlink():
                problems.add(rel, "", "is a symbolic link; bundles hold only regular files")
            elif entry.is_dir():
                if entry.name not in IGNORED_DIRS:
                    pending.append(Path(entry.path))
            elif not entry.is_file():
                problems.add(rel, "", "is not a regular file")
            elif len(files) > MAX_FILES:
                problems.manifest("files", f"the folder holds over {MAX_FILES} files")
                return None
            else:
                with open(entry.path, "rb") as handle:
                    files[rel] = handle.read(MAX_FILE_BYTES + 1)
    return files


# --- checking ----------------------------------------------------------------------------------


def _parse(files: dict[str, bytes], problems: _Problems, *, grading: bool = True) -> Bundle:
    text, manifest = _read_manifest(files.get(MANIFEST), problems)
    if manifest is None:
        raise BundleInvalid(problems.errors)
    _check_storable(manifest, "", problems)
    _check_unknown(manifest, TOP_KEYS, "", problems)
    meta = _check_metadata(manifest, problems)
    listed = _check_files(manifest, files, problems)
    statement = _check_statement(manifest, listed, problems)
    criteria = _check_rubric(manifest, meta.get("kind"), problems)
    table = (
        _check_grading(manifest, meta.get("kind"), listed, problems)
        if grading
        else _as_table(manifest.get("grading"))
    )
    if problems.errors:
        raise BundleInvalid(problems.errors)
    return Bundle(
        name=problems.name,
        manifest_text=text,
        manifest=manifest,
        slug=meta["slug"],
        title=meta["title"],
        kind=meta["kind"],
        difficulty=meta["difficulty"],
        tags=tuple(meta["tags"]),
        hardware=meta["hardware"],
        statement=statement,
        grading=table,
        files=tuple(sorted(listed, key=lambda f: f.path)),
        criteria=criteria,
    )


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def _read_manifest(data: bytes | None, problems: _Problems) -> tuple[str, dict[str, Any] | None]:
    if data is None:
        problems.manifest("", "is missing; every bundle has a task.toml")
        return "", None
    if len(data) > MAX_FILE_BYTES:
        problems.manifest("", f"is larger than {MAX_FILE_BYTES} bytes")
        return "", None
    text = _decode(MANIFEST, data, problems)
    if text is None:
        return "", None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.search(message)
        line = column = None
        if match:
            line, column = int(match[1]), int(match[2])
            detail = message[: match.start()]
            message = f"TOML syntax error at line {line}, column {column}: {detail}"
        else:
            message = f"TOML syntax error: {message}"
        problems.add(MANIFEST, "", message, line=line, column=column)
        return text, None


def _decode(path: str, data: bytes, problems: _Problems) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.add(path, "", f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at {exc.start})")
        return None
    if "\x00" in text:
        problems.add(path, "", "contains a NUL byte; bundle files are text")
        return None
    return text


def _join(prefix: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else key


_TYPE_NAMES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
    ((datetime.date, datetime.time), "a date/time"),
)


def _type_name(value: Any) -> str:
    return next((name for kind, name in _TYPE_NAMES if isinstance(value, kind)), "a value")


def _check_storable(value: Any, where: str, problems: _Problems) -> None:
    """Everything in a manifest is stored as JSON in PostgreSQL: no dates, no NaN or
    infinities, no NUL characters."""
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                problems.manifest(where, "a key contains a NUL character")
            _check_storable(item, _join(where, key), problems)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_storable(item, _join(where, index), problems)
    elif isinstance(value, datetime.date | datetime.time):
        problems.manifest(where, "dates and times are not supported; use a string")
    elif isinstance(value, float) and not math.isfinite(value):
        problems.manifest(where, f"{value} is not supported; use a finite number")
    elif isinstance(value, str) and "\x00" in value:
        problems.manifest(where, "contains a NUL character")


def _check_unknown(
    table: dict[str, Any], known: tuple[str, ...], where: str, problems: _Problems
) -> None:
    for key in table:
        if key not in known:
            expected = ", ".join(known)
            problems.manifest(_join(where, key), f"unknown key (expected one of: {expected})")


_MISSING = object()


def _take(
    table: dict[str, Any],
    key: str,
    kind: type,
    where: str,
    problems: _Problems,
    *,
    required: bool = True,
) -> Any:
    """``table[key]`` if it has type ``kind`` (an error and None otherwise)."""
    value = table.get(key, _MISSING)
    field = _join(where, key)
    if value is _MISSING:
        if required:
            problems.manifest(field, "is required")
        return None
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        expected = next(name for t, name in _TYPE_NAMES if t is kind)
        problems.manifest(field, f"must be {expected}, not {_type_name(value)}")
        return None
    return value


def _take_choice(
    table: dict[str, Any],
    key: str,
    choices: tuple[str, ...],
    where: str,
    problems: _Problems,
    *,
    required: bool = True,
) -> str | None:
    value = _take(table, key, str, where, problems, required=required)
    if value is not None and value not in choices:
        problems.manifest(_join(where, key), f"{value!r} is not one of: {', '.join(choices)}")
        return None
    return value


def _take_text(
    table: dict[str, Any], key: str, where: str, problems: _Problems, *, limit: int
) -> str | None:
    value = _take(table, key, str, where, problems)
    if value is not None and not value.strip():
        problems.manifest(_join(where, key), "must not be empty")
        return None
    if value is not None and len(value) > limit:
        problems.manifest(_join(where, key), f"is longer than {limit} characters")
        return None
    return value


def _check_metadata(manifest: dict[str, Any], problems: _Problems) -> dict[str, Any]:
    slug = _take(manifest, "slug", str, "", problems)
    if slug is not None and not SLUG_RE.fullmatch(slug):
        problems.manifest("slug", f"{slug!r} must be 3 to 80 characters from a-z, 0-9 and -")
    tags = _take(manifest, "tags", list, "", problems, required=False)
    for index, tag in enumerate(tags or []):
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS:
            problems.manifest(
                _join("tags", index), f"must be a non-empty string of at most {MAX_TAG_CHARS}"
            )
    return {
        "slug": slug,
        "title": _take_text(manifest, "title", "", problems, limit=MAX_TITLE_CHARS),
        "kind": _take_choice(manifest, "kind", registry.kinds(), "", problems),
        "difficulty": _take_choice(manifest, "difficulty", DIFFICULTIES, "", problems),
        "hardware": _take_choice(manifest, "hardware", HARDWARE, "", problems),
        "tags": tags or [],
    }


def _verdicts() -> tuple[str, ...]:
    return tuple(Verdict.values())


def _check_files(
    manifest: dict[str, Any], present: dict[str, bytes], problems: _Problems
) -> list[BundleFile]:
    """The listed files that are valid; every problem with any of them is reported."""
    entries = _take(manifest, "files", list, "", problems)
    if entries is None:
        return []
    if len(entries) > MAX_FILES:
        problems.manifest("files", f"lists {len(entries)} files; at most {MAX_FILES}")
    verdicts = _verdicts()
    listed: list[BundleFile] = []
    seen: dict[str, str] = {}
    for index, entry in enumerate(entries):
        where = _join("files", index)
        if not isinstance(entry, dict):
            problems.manifest(where, f"must be a table, not {_type_name(entry)}")
            continue
        checked = _checkfile_entry(entry, where, verdicts, problems)
        path = entry.get("path")
        if not isinstance(path, str) or path_problem(path):
            continue
        folded = path.casefold()
        if folded in seen:
            same = "the same path" if seen[folded] == path else f"{seen[folded]} (case differs)"
            problems.manifest(_join(where, "path"), f"{path} is listed twice: {same}")
            continue
        seen[folded] = path
        data = present.get(path)
        if data is None:
            problems.manifest(_join(where, "path"), f"{path} is listed but not in the bundle")
        elif _check_content(path, data, problems) and checked is not None:
            listed.append(dataclasses.replace(checked, data=data))
    _check_layout(set(seen.values()), present, problems)
    return listed


def _checkfile_entry(
    entry: dict[str, Any], where: str, verdicts: tuple[str, ...], problems: _Problems
) -> BundleFile | None:
    before = len(problems.errors)
    _check_unknown(entry, FILE_KEYS, where, problems)
    path = _take(entry, "path", str, where, problems)
    if path is not None and (why := path_problem(path)):
        problems.manifest(_join(where, "path"), f"{path!r} {why}")
    visibility = _take_choice(entry, "visibility", VISIBILITIES, where, problems)
    role = _take_choice(entry, "role", ROLES, where, problems)
    note = _take(entry, "note", str, where, problems, required=False) or ""
    verdict = _take(entry, "expected_verdict", str, where, problems, required=False) or ""
    expectable = [name for name in verdicts if name not in NOT_THE_SUBMISSIONS]
    if role == "negative" and verdict not in expectable:
        problems.manifest(
            _join(where, "expected_verdict"),
            f"a negative example needs the verdict it must get, one of: {', '.join(expectable)}"
            + (f" (got {verdict!r})" if verdict else ""),
        )
    if role not in (None, "negative") and verdict:
        problems.manifest(_join(where, "expected_verdict"), "only negative examples have one")
    if role in ALWAYS_HIDDEN_ROLES and visibility == "prompt":
        problems.manifest(_join(where, "visibility"), f"a {role} file must be hidden")
    if len(problems.errors) > before:
        return None
    return BundleFile(path, b"", str(visibility), str(role), verdict, note)


def _check_content(path: str, data: bytes, problems: _Problems) -> bool:
    if len(data) > MAX_FILE_BYTES:
        problems.add(path, "", f"is larger than {MAX_FILE_BYTES} bytes")
        return False
    if is_binary(path):
        if not data.startswith(GZIP_MAGIC):
            problems.add(path, "", "is not gzip data, yet its name ends in .gz")
            return False
        return True
    return _decode(path, data, problems) is not None


def _check_layout(paths: set[str], present: dict[str, bytes], problems: _Problems) -> None:
    """No stray files, no file that is also a folder, a bounded total size."""
    for path in sorted(present):
        if path != MANIFEST and path not in paths:
            problems.manifest("files", f"{path} is in the bundle but not listed in [[files]]")
    for path in sorted(paths):
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in paths:
                problems.manifest("files", f"{'/'.join(parts[:depth])} is a file and a folder")
    total = sum(len(present[p]) for p in paths if p in present)
    if total > MAX_TOTAL_BYTES:
        problems.manifest("files", f"the files total {total} bytes; at most {MAX_TOTAL_BYTES}")


def _entries_with_role(manifest: dict[str, Any], role: str) -> list[str]:
    entries = manifest.get("files")
    if not isinstance(entries, list):
        return []
    return [str(e.get("path")) for e in entries if isinstance(e, dict) and e.get("role") == role]


def _check_statement(
    manifest: dict[str, Any], listed: list[BundleFile], problems: _Problems
) -> str:
    statement = _take(manifest, "statement", str, "", problems)
    statements = _entries_with_role(manifest, "statement")
    if len(statements) > 1:
        problems.manifest("files", f"only one file may have role statement: {statements}")
    if statement is None:
        return ""
    target = next((f for f in listed if f.path == statement), None)
    if target is None and statement not in _listed_paths(manifest):
        problems.manifest("statement", f"{statement!r} is not a listed file")
    elif target is not None and (target.role != "statement" or target.visibility != "prompt"):
        problems.manifest(
            "statement", f"{statement} must be listed with role statement and visibility prompt"
        )
    return statement


def _listed_paths(manifest: dict[str, Any]) -> set[Any]:
    entries = manifest.get("files")
    if not isinstance(entries, list):
        return set()
    return {e.get("path") for e in entries if isinstance(e, dict)}


@dataclass(frozen=True)
class _Rules:
    """The automatic rule types a task's kind offers, and its grader, which checks its
    own types' parameters. With no known kind (an error already) rules go unchecked:
    which types exist depends on the kind."""

    types: dict[str, RuleType]
    grader: TaskKind | None

    @classmethod
    def of(cls, kind: str | None) -> _Rules:
        if kind is None or not registry.is_kind(kind):
            return cls({}, None)
        grader = registry.get(kind)
        return cls({t.name: t for t in grader.rule_types()}, grader)


def _check_rubric(
    manifest: dict[str, Any], kind: str | None, problems: _Problems
) -> tuple[BundleCriterion, ...] | None:
    rubric = _take(manifest, "rubric", dict, "", problems, required=False)
    if rubric is None:
        return None
    _check_unknown(rubric, ("criteria",), "rubric", problems)
    entries = _take(rubric, "criteria", list, "rubric", problems, required=False) or []
    criteria: list[BundleCriterion] = []
    seen: set[str] = set()
    rules = _Rules.of(kind)
    for index, entry in enumerate(entries):
        where = _join("rubric.criteria", index)
        if not isinstance(entry, dict):
            problems.manifest(where, f"must be a table, not {_type_name(entry)}")
            continue
        criterion = _check_criterion(entry, where, rules, problems)
        if criterion is None:
            continue
        if criterion.key in seen:
            problems.manifest(_join(where, "id"), f"{criterion.key!r} is used twice")
        seen.add(criterion.key)
        criteria.append(criterion)
    return tuple(criteria)


def _check_criterion(
    entry: dict[str, Any], where: str, rules: _Rules, problems: _Problems
) -> BundleCriterion | None:
    before = len(problems.errors)
    _check_unknown(entry, CRITERION_KEYS, where, problems)
    key = _take(entry, "id", str, where, problems)
    if key is not None and not CRITERION_ID_RE.fullmatch(key):
        problems.manifest(
            _join(where, "id"),
            f"{key!r} must be 1 to 60 of a-z, 0-9, '.', '_' and '-', starting with a letter "
            "or digit" + _id_suggestion(key),
        )
    title = _take_text(entry, "title", where, problems, limit=MAX_TITLE_CHARS)
    description = _take(entry, "description", str, where, problems, required=False) or ""
    points = _take(entry, "points", int, where, problems)
    if points == 0:
        problems.manifest(_join(where, "points"), "must not be 0 (negative points are a penalty)")
    kind = _take_choice(entry, "kind", CRITERION_KINDS, where, problems)
    rule: dict[str, Any] = {}
    levels: list[dict[str, Any]] = []
    if kind == "automatic":
        _forbid(entry, "levels", "automatic criteria are scored by their rule", where, problems)
        rule = _check_rule(entry, where, rules, problems)
    elif kind == "human":
        _forbid(entry, "rule", "human criteria are scored on their levels", where, problems)
        levels = _check_levels(entry, points, where, problems)
    if len(problems.errors) > before or key is None or points is None or kind is None:
        return None
    return BundleCriterion(key, str(title), points, kind, description, rule, levels)


def _id_suggestion(key: str) -> str:
    suggestion = re.sub(r"[^a-z0-9._-]", "-", key.lower()).lstrip("._-")[:60]
    return f" (e.g. {suggestion!r})" if CRITERION_ID_RE.fullmatch(suggestion) else ""


def _forbid(entry: dict[str, Any], key: str, why: str, where: str, problems: _Problems) -> None:
    if key in entry:
        problems.manifest(_join(where, key), f"not allowed: {why}")


def _check_rule(
    entry: dict[str, Any], where: str, rules: _Rules, problems: _Problems
) -> dict[str, Any]:
    """An automatic rule: a type the task's kind offers, its parameters and no others;
    the kind checks the values of its own types' parameters."""
    rule = _take(entry, "rule", dict, where, problems)
    if rule is None:
        return {}
    if rules.grader is None:
        return rule
    where = _join(where, "rule")
    name = _take_choice(rule, "type", tuple(rules.types), where, problems)
    if name is None:
        return rule
    _check_unknown(rule, ("type", *rules.types[name].params), where, problems)
    if name == "verdict":
        _take_choice(rule, "equals", _verdicts(), where, problems)
    elif name == "integrity":
        _take(rule, "clean", bool, where, problems)
    else:
        for param, message in rules.grader.check_kind_rule(rule):
            problems.manifest(_join(where, param), message)
    return rule


def _check_levels(
    entry: dict[str, Any], points: int | None, where: str, problems: _Problems
) -> list[dict[str, Any]]:
    levels = _take(entry, "levels", list, where, problems)
    if levels is None:
        return []
    if not levels:
        problems.manifest(_join(where, "levels"), "a human criterion needs at least one level")
    low, high = sorted((0, points or 0))
    scores: set[float] = set()
    for index, level in enumerate(levels):
        at = _join(_join(where, "levels"), index)
        if not isinstance(level, dict):
            problems.manifest(at, f"must be a table, not {_type_name(level)}")
            continue
        _check_unknown(level, LEVEL_KEYS, at, problems)
        _take_text(level, "descriptor", at, problems, limit=2000)
        score = level.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float):
            problems.manifest(_join(at, "score"), "is required: a number")
        elif points is not None and not low <= score <= high:
            problems.manifest(_join(at, "score"), f"{score} is outside {low}..{high}")
        elif score in scores:
            problems.manifest(_join(at, "score"), f"{score} is used by another level")
        else:
            scores.add(score)
    return levels


def _as_table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _check_grading(
    manifest: dict[str, Any], kind: str | None, listed: list[BundleFile], problems: _Problems
) -> dict[str, Any]:
    """The ``[grading]`` table, checked by the kind's grader (``TaskKind.parse_grading``);
    a kind without a registered grader has no grading to check."""
    grader = registry.get(kind) if kind is not None and registry.is_kind(kind) else None
    required = grader is not None and grader.grading_required
    grading = _take(manifest, "grading", dict, "", problems, required=required)
    if grading is None or grader is None:
        return grading or {}
    if {f.path for f in listed} != _listed_paths(manifest):
        return grading  # a listed file is already reported; the grader would only repeat it
    try:
        grader.parse_grading(manifest, {f.path: f.text for f in listed})
    except GradingTableError as exc:
        if exc.file == MANIFEST:
            problems.manifest(exc.field, exc.message)
        else:
            problems.add(exc.file, exc.field, exc.message)
    except Exception as exc:  # a bug in the checker must still refuse the bundle, loudly
        problems.manifest("grading", f"the grading check failed: {type(exc).__name__}: {exc}")
    return grading


def find_bundles(path: str | os.PathLike[str]) -> tuple[list[Path], list[Path]]:
    """``(bundles, skipped)``: ``path`` itself when it holds a task.toml, else its
    subfolders that do; ``skipped`` are the other subfolders (hidden ones and caches
    aside). Raises NotADirectoryError when ``path`` is not a folder."""
    root = Path(path)
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a folder")
    if (root / MANIFEST).exists():
        return [root], []
    bundles: list[Path] = []
    skipped: list[Path] = []
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith(".") or child.name in IGNORED_DIRS:
            continue
        (bundles if (child / MANIFEST).exists() else skipped).append(child)
    return bundles, skipped
