"""Reading and checking task bundles (tasks/bundle.py): no database involved."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tasks.bundle import (
    MAX_FILE_BYTES,
    MAX_FILES,
    BundleInvalid,
    find_bundles,
    load_bundle,
    parse_bundle,
    path_problem,
)

MANIFEST = """\
# A small but complete bundle; comments and layout must survive a round trip.
slug = "row-softmax"
title = "Row-wise softmax"
kind = "kernel"
difficulty = "medium"
tags = ["reduction", "softmax"]
hardware = "cpu"
statement = "statement.md"

[grading]
format = "kernelbench"
language = "pytorch"
trials = 5
seed_inputs = true

[[grading.shapes]]
name = "small"
batch_size = 4
dim = 33
scale = 10000.0

[grading.tolerances]
float32 = { atol = 1e-5, rtol = 1e-5 }
float16 = { atol = 1e-3, rtol = 1e-3 }

[grading.timing]
warmup = 1
min_batches = 3
max_batches = 5
target_rel_error = 0.05
budget_s = 2.0

[[files]]
path = "statement.md"
visibility = "prompt"
role = "statement"

[[files]]
path = "reference.py"
visibility = "hidden"
role = "reference"

[[files]]
path = "solution.py"
visibility = "hidden"
role = "solution"

[[files]]
path = "bad/no_max.py"
visibility = "hidden"
role = "negative"
expected_verdict = "wrong_answer"
note = "no max subtraction: overflows on large inputs"

[rubric]
[[rubric.criteria]]
id = "correct"
title = "Correct on every shape"
description = "The grader accepts the solution."
points = 6
kind = "automatic"
rule = { type = "verdict", equals = "accepted" }

[[rubric.criteria]]
id = "speedup-2x"
title = "Twice as fast"
points = 2
kind = "automatic"
rule = { type = "speedup", at_least = 2.0 }

[[rubric.criteria]]
id = "clarity"
title = "Clarity"
points = 2
kind = "human"
levels = [
  { score = 0, descriptor = "Hard to follow." },
  { score = 2, descriptor = "Clear at a glance." },
]
"""

REFERENCE = """\
import torch
from torch import nn

batch_size = 4
dim = 33
scale = 1.0


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim) * scale]


def get_init_inputs():
    return []
"""

SOLUTION = "import torch\r\nfrom torch import nn\r\n\r\n\r\nclass ModelNew(nn.Module):\r\n"
SOLUTION += "    def forward(self, x):\r\n        return torch.exp(x - x.amax(-1, True)).div(\r\n"
SOLUTION += "            torch.exp(x - x.amax(-1, True)).sum(-1, True))"  # CRLF, no final newline

BAD = """\
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
"""


STATEMENT = "# Softmax über Zeilen\n\nCompute softmax(x) per row — stably, ≤ 1 ulp.\n"


def valid_files() -> dict[str, bytes]:
    """A valid bundle, path -> bytes."""
    return {
        "task.toml": MANIFEST.encode(),
        "statement.md": STATEMENT.encode(),
        "reference.py": REFERENCE.encode(),
        "solution.py": SOLUTION.encode(),
        "bad/no_max.py": BAD.encode(),
    }


def write_bundle(folder: Path, files: dict[str, bytes]) -> Path:
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder


def edit(files: dict[str, bytes], old: str, new: str, path: str = "task.toml") -> None:
    text = files[path].decode()
    assert text.count(old) == 1, f"{old!r} must occur once in {path}"
    files[path] = text.replace(old, new).encode()


def _many_files(files: dict[str, bytes]) -> None:
    extra = "".join(
        f'\n[[files]]\npath = "more/f{i}.txt"\nvisibility = "hidden"\nrole = "other"\n'
        for i in range(MAX_FILES)
    )
    edit(files, "\n[rubric]\n", extra + "\n[rubric]\n")
    files.update({f"more/f{i}.txt": b"x" for i in range(MAX_FILES)})


def _case_duplicate(files: dict[str, bytes]) -> None:
    edit(files, 'path = "bad/no_max.py"', 'path = "Solution.py"')
    files["Solution.py"] = b"x"


def _file_and_folder(files: dict[str, bytes]) -> None:
    edit(files, 'path = "solution.py"', 'path = "bad"')
    files["bad"] = files.pop("solution.py")


def _remove_grading(files: dict[str, bytes]) -> None:
    text = files["task.toml"].decode()
    start, end = text.index("[grading]"), text.index("[[files]]")
    files["task.toml"] = (text[:start] + text[end:]).encode()


LEVELS = """levels = [
  { score = 0, descriptor = "Hard to follow." },
  { score = 2, descriptor = "Clear at a glance." },
]"""

Mutation = Callable[[dict[str, bytes]], object]


def case(name: str, mutate: Mutation, field: str, path: str = "task.toml") -> Any:
    """A way to break the valid bundle, and the file and field the error must name."""
    return pytest.param(mutate, path, field, id=name)


MALFORMED = [
    case("no-manifest", lambda f: f.pop("task.toml"), ""),
    case("toml-syntax", lambda f: edit(f, 'difficulty = "medium"', "difficulty = = 1"), ""),
    case("manifest-not-utf8", lambda f: f.update({"task.toml": b"slug = '\xff'"}), ""),
    case("missing-title", lambda f: edit(f, 'title = "Row-wise softmax"\n', ""), "title"),
    case(
        "tags-not-array", lambda f: edit(f, 'tags = ["reduction", "softmax"]', 'tags = "x"'), "tags"
    ),
    case("tag-not-string", lambda f: edit(f, '"reduction", "softmax"', '"a", 3'), "tags[1]"),
    case("slug-pattern", lambda f: edit(f, '"row-softmax"', '"Row_Softmax"'), "slug"),
    case("slug-too-short", lambda f: edit(f, '"row-softmax"', '"rs"'), "slug"),
    case("kind-choice", lambda f: edit(f, 'kind = "kernel"', 'kind = "kernal"'), "kind"),
    case("difficulty-choice", lambda f: edit(f, '"medium"', '"extreme"'), "difficulty"),
    case("hardware-choice", lambda f: edit(f, 'hardware = "cpu"', 'hardware = "tpu"'), "hardware"),
    case("unknown-key", lambda f: edit(f, "tags =", 'dificulty = "hard"\ntags ='), "dificulty"),
    case(
        "statement-not-listed",
        lambda f: edit(f, 'statement = "statement.md"', 'statement = "README.md"'),
        "statement",
    ),
    case(
        "statement-hidden",
        lambda f: edit(f, 'visibility = "prompt"', 'visibility = "hidden"'),
        "statement",
    ),
    case("listed-file-missing", lambda f: f.pop("solution.py"), "files[2].path"),
    case("stray-file", lambda f: f.update({"notes.txt": b"todo"}), "files"),
    case(
        "absolute-path",
        lambda f: edit(f, 'path = "solution.py"', 'path = "/etc/passwd"'),
        "files[2].path",
    ),
    case(
        "dotdot-path",
        lambda f: edit(f, 'path = "solution.py"', 'path = "../solution.py"'),
        "files[2].path",
    ),
    case(
        "control-char-path",
        lambda f: edit(f, 'path = "solution.py"', 'path = "sol\\tution.py"'),
        "files[2].path",
    ),
    case(
        "duplicate-path",
        lambda f: edit(f, 'path = "bad/no_max.py"', 'path = "solution.py"'),
        "files[3].path",
    ),
    case("case-duplicate-path", _case_duplicate, "files[3].path"),
    case("file-and-folder", _file_and_folder, "files"),
    case(
        "visibility-choice",
        lambda f: edit(
            f,
            'visibility = "hidden"\nrole = "reference"',
            'visibility = "secret"\nrole = "reference"',
        ),
        "files[1].visibility",
    ),
    case(
        "role-choice", lambda f: edit(f, 'role = "reference"', 'role = "oracle"'), "files[1].role"
    ),
    case(
        "unknown-file-key",
        lambda f: edit(f, 'role = "solution"', 'role = "solution"\nhidden = true'),
        "files[2].hidden",
    ),
    case(
        "negative-without-verdict",
        lambda f: edit(f, 'expected_verdict = "wrong_answer"\n', ""),
        "files[3].expected_verdict",
    ),
    case(
        "negative-unknown-verdict",
        lambda f: edit(f, '"wrong_answer"', '"wrong"'),
        "files[3].expected_verdict",
    ),
    case(
        "verdict-on-non-negative",
        lambda f: edit(f, 'role = "solution"', 'role = "solution"\nexpected_verdict = "accepted"'),
        "files[2].expected_verdict",
    ),
    case(
        "solution-shown",
        lambda f: edit(
            f,
            'visibility = "hidden"\nrole = "solution"',
            'visibility = "prompt"\nrole = "solution"',
        ),
        "files[2].visibility",
    ),
    case("two-references", lambda f: edit(f, 'role = "solution"', 'role = "reference"'), "files"),
    case("no-reference", lambda f: edit(f, 'role = "reference"', 'role = "test"'), "files"),
    case(
        "file-not-utf8", lambda f: f.update({"reference.py": b"x = '\xe9'\n"}), "", "reference.py"
    ),
    case("file-with-nul", lambda f: f.update({"reference.py": b"x = 1\x00\n"}), "", "reference.py"),
    case(
        "file-too-large",
        lambda f: f.update({"solution.py": b"#" * (MAX_FILE_BYTES + 1)}),
        "",
        "solution.py",
    ),
    case("too-many-files", _many_files, "files"),
    case(
        "criterion-duplicate-id",
        lambda f: edit(f, 'id = "clarity"', 'id = "correct"'),
        "rubric.criteria[2].id",
    ),
    case(
        "criterion-id-pattern",
        lambda f: edit(f, 'id = "speedup-2x"', 'id = "Speedup 2x"'),
        "rubric.criteria[1].id",
    ),
    case(
        "criterion-zero-points",
        lambda f: edit(f, "points = 6", "points = 0"),
        "rubric.criteria[0].points",
    ),
    case(
        "criterion-float-points",
        lambda f: edit(f, "points = 6", "points = 6.5"),
        "rubric.criteria[0].points",
    ),
    case(
        "criterion-kind-choice",
        lambda f: edit(f, 'points = 6\nkind = "automatic"', 'points = 6\nkind = "auto"'),
        "rubric.criteria[0].kind",
    ),
    case(
        "rule-type-unknown",
        lambda f: edit(f, 'type = "verdict"', 'type = "vibes"'),
        "rubric.criteria[0].rule.type",
    ),
    case(
        "verdict-rule-bad-verdict",
        lambda f: edit(f, 'equals = "accepted"', 'equals = "passed"'),
        "rubric.criteria[0].rule.equals",
    ),
    case(
        "verdict-rule-extra-key",
        lambda f: edit(f, 'equals = "accepted"', 'equals = "accepted", at_least = 1'),
        "rubric.criteria[0].rule.at_least",
    ),
    case(
        "speedup-rule-not-positive",
        lambda f: edit(f, "at_least = 2.0", "at_least = -1"),
        "rubric.criteria[1].rule.at_least",
    ),
    case(
        "integrity-rule-not-boolean",
        lambda f: edit(f, 'type = "speedup", at_least = 2.0', 'type = "integrity", clean = "yes"'),
        "rubric.criteria[1].rule.clean",
    ),
    case(
        "automatic-without-rule",
        lambda f: edit(f, 'rule = { type = "speedup", at_least = 2.0 }\n', ""),
        "rubric.criteria[1].rule",
    ),
    case(
        "automatic-with-levels",
        lambda f: edit(
            f, "at_least = 2.0 }", 'at_least = 2.0 }\nlevels = [{ score = 0, descriptor = "x" }]'
        ),
        "rubric.criteria[1].levels",
    ),
    case(
        "human-without-levels",
        lambda f: edit(f, LEVELS, "levels = []"),
        "rubric.criteria[2].levels",
    ),
    case(
        "level-without-descriptor",
        lambda f: edit(f, '{ score = 0, descriptor = "Hard to follow." }', "{ score = 0 }"),
        "rubric.criteria[2].levels[0].descriptor",
    ),
    case(
        "level-score-out-of-range",
        lambda f: edit(f, "{ score = 2,", "{ score = 3,"),
        "rubric.criteria[2].levels[1].score",
    ),
    case("grading-missing", _remove_grading, "grading"),
    case(
        "grading-format",
        lambda f: edit(f, 'format = "kernelbench"', 'format = "triton"'),
        "grading.format",
    ),
    case(
        "grading-tolerance",
        lambda f: edit(f, "float16 = { atol = 1e-3", "float16 = { atol = -1.0"),
        "grading.tolerances.float16.atol",
    ),
    case(
        "not-a-finite-number",
        lambda f: edit(f, "scale = 10000.0", "scale = nan"),
        "grading.shapes[0].scale",
    ),
    case(
        "date-value",
        lambda f: edit(f, "scale = 10000.0", "scale = 2024-01-01"),
        "grading.shapes[0].scale",
    ),
]


def broken(mutate: Mutation) -> dict[str, bytes]:
    files = valid_files()
    mutate(files)
    return files


def errors_of(files: dict[str, bytes]) -> list[tuple[str, str]]:
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle(files, name="row-softmax")
    return [(e.path, e.field) for e in caught.value.errors]


def test_a_valid_bundle_parses_with_every_field():
    bundle = parse_bundle(valid_files(), name="row-softmax")
    assert (bundle.slug, bundle.kind, bundle.difficulty, bundle.hardware) == (
        "row-softmax",
        "kernel",
        "medium",
        "cpu",
    )
    assert bundle.tags == ("reduction", "softmax")
    assert bundle.manifest_text == MANIFEST
    assert [f.path for f in bundle.files] == [
        "bad/no_max.py",
        "reference.py",
        "solution.py",
        "statement.md",
    ]
    negative = bundle.files[0]
    assert (negative.role, negative.expected_verdict) == ("negative", "wrong_answer")
    assert bundle.statement_text.startswith("# Softmax über Zeilen")
    assert bundle.grading["shapes"][0]["scale"] == 10000.0
    assert [c.key for c in bundle.criteria or ()] == ["correct", "speedup-2x", "clarity"]
    assert bundle.criteria is not None and bundle.criteria[2].levels[1]["score"] == 2


def test_a_bundle_reads_the_same_from_a_folder(tmp_path):
    folder = write_bundle(tmp_path / "row-softmax", valid_files())
    assert load_bundle(folder) == parse_bundle(valid_files(), name="row-softmax")


@pytest.mark.parametrize(("mutate", "path", "field"), MALFORMED)
def test_a_malformed_bundle_names_the_file_and_the_field(mutate, path, field):
    assert (f"row-softmax/{path}", field) in errors_of(broken(mutate))


def test_every_error_is_reported_at_once():
    files = valid_files()
    edit(files, 'kind = "kernel"', 'kind = "kernal"')
    edit(files, '"wrong_answer"', '"wrong"')
    edit(files, "points = 6", "points = 0")
    files["notes.txt"] = b"stray"
    found = errors_of(files)
    for expected in [
        ("row-softmax/task.toml", "kind"),
        ("row-softmax/task.toml", "files[3].expected_verdict"),
        ("row-softmax/task.toml", "rubric.criteria[0].points"),
        ("row-softmax/task.toml", "files"),
    ]:
        assert expected in found


def test_a_toml_syntax_error_gives_line_and_column():
    files = valid_files()
    edit(files, 'difficulty = "medium"', "difficulty = = 1")
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle(files, name="row-softmax")
    (error,) = caught.value.errors
    assert (error.line, error.column) == (5, 14)
    assert "line 5, column 14" in str(error)


def test_error_messages_say_what_is_wrong():
    files = valid_files()
    edit(files, 'role = "reference"', 'role = "oracle"')
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle(files, name="row-softmax")
    messages = [str(e) for e in caught.value.errors]
    assert (
        "row-softmax/task.toml: files[1].role: 'oracle' is not one of: statement, reference, "
        "solution, negative, test, starter, artifact, other" in messages
    )


def test_a_stray_file_is_named(tmp_path):
    files = valid_files()
    files["bad/forgotten.py"] = b"x = 1\n"
    with pytest.raises(BundleInvalid, match=r"bad/forgotten\.py is in the bundle but not listed"):
        parse_bundle(files, name="row-softmax")


def test_a_symlink_in_a_bundle_folder_is_refused(tmp_path):
    folder = write_bundle(tmp_path / "row-softmax", valid_files())
    (folder / "solution.py").unlink()
    os.symlink("/etc/passwd", folder / "solution.py")
    with pytest.raises(BundleInvalid) as caught:
        load_bundle(folder)
    assert ("row-softmax/solution.py", "") in [(e.path, e.field) for e in caught.value.errors]


def test_python_caches_in_a_bundle_folder_are_ignored(tmp_path):
    folder = write_bundle(tmp_path / "row-softmax", valid_files())
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "reference.cpython-311.pyc").write_bytes(b"\x00\xff")
    assert load_bundle(folder).slug == "row-softmax"


def test_a_bundle_without_rubric_has_no_criteria():
    files = valid_files()
    text = files["task.toml"].decode()
    files["task.toml"] = text[: text.index("[rubric]")].encode()
    bundle = parse_bundle(files, name="row-softmax")
    assert bundle.criteria is None
    assert "rubric" not in bundle.hash_manifest()


def test_the_kind_is_a_registered_one_and_decides_whether_grading_is_needed(
    text_answer, monkeypatch
):
    files = valid_files()
    _remove_grading(files)
    edit(files, 'kind = "kernel"', 'kind = "quiz"')
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle(files, name="row-softmax")
    assert [(e.field, e.message) for e in caught.value.errors] == [
        ("kind", "'quiz' is not one of: kernel, debugging, profiling, serving, text-answer")
    ]
    edit(files, 'kind = "quiz"', 'kind = "text-answer"')
    monkeypatch.setattr(type(text_answer), "grading_required", False)
    with pytest.raises(BundleInvalid) as caught:  # the rule types are the kind's too
        parse_bundle(files, name="row-softmax")
    assert [(e.field, e.message) for e in caught.value.errors] == [
        ("rubric.criteria[1].rule.type", "'speedup' is not one of: verdict, integrity, matched")
    ]
    edit(files, 'rule = { type = "speedup", at_least = 2.0 }', 'rule = { type = "matched" }')
    assert parse_bundle(files, name="row-softmax").grading == {}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("a/b.py", None),
        ("", "is empty"),
        ("/abs.py", "is absolute"),
        ("a/../b.py", "'..'"),
        ("./a.py", "'.'"),
        ("a//b.py", "empty"),
        ("a\\b.py", "backslash"),
        ("a\nb.py", "control character"),
        ("a\x7fb.py", "control character"),
        ("task.toml", "manifest"),
        ("x" * 256, "longer than 255"),
    ],
)
def test_path_safety(path, problem):
    found = path_problem(path)
    assert found is None if problem is None else problem in (found or "")


def test_find_bundles_takes_a_bundle_or_a_folder_of_bundles(tmp_path):
    one = write_bundle(tmp_path / "catalog" / "one", valid_files())
    two = write_bundle(tmp_path / "catalog" / "two", valid_files())
    (tmp_path / "catalog" / "work-in-progress").mkdir()
    (tmp_path / "catalog" / ".git").mkdir()
    (tmp_path / "catalog" / "README.md").write_text("catalog")
    assert find_bundles(one) == ([one], [])
    assert find_bundles(tmp_path / "catalog") == (
        [one, two],
        [tmp_path / "catalog" / "work-in-progress"],
    )
    with pytest.raises(NotADirectoryError):
        find_bundles(tmp_path / "missing")
