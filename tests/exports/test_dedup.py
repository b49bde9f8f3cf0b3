"""Exact and near-duplicate solutions are removed: the same code, recommented,
reformatted or renamed, is one solution; code that differs in anything else is
another solution, however much boilerplate the two share."""

from __future__ import annotations

from submissions.fingerprint import is_explanation, normalise, solution_key
from submissions.models import Submission
from tasks.models import Task
from tests.exports.conftest import (
    EXPERT,
    all_rows,
    build,
    define,
    graded,
    honest_code,
    republish,
    snapshot_folder,
    solution,
)

PYTHON = '''import torch  # the one import


def relu(x):
    """Keep the docstring: it is code."""
    s = "# not a comment"
    return torch.clamp(x, min=0)
'''


def test_comments_and_whitespace_do_not_make_a_new_solution():
    reformatted = (
        "import torch\n\n# a new comment\ndef relu( x ):\n"
        '    """Keep the docstring: it is code."""\n'
        '    s = "# not a comment"\n\n\n    return torch.clamp( x, min = 0 )   # trailing\n'
    )

    assert solution_key([("solution.py", PYTHON)]) == solution_key([("kernel.py", reformatted)])


def test_a_change_in_code_strings_or_docstrings_is_a_new_solution():
    for changed in (
        PYTHON.replace("min=0", "min=1"),
        PYTHON.replace("# not a comment", "# other text"),
        PYTHON.replace("Keep the docstring", "Another docstring"),
    ):
        assert solution_key([("a.py", changed)]) != solution_key([("a.py", PYTHON)])


def test_c_and_cuda_comments_are_stripped_but_division_is_kept():
    code = 'int half(int a) { // halve\n  return a / 2; /* exact */ }\nconst char *s = "//x";'

    assert normalise("k.cu", code) == 'inthalf(inta){returna/2;}constchar*s="//x";'
    assert normalise("k.cpp", code) == normalise("k.cu", code)


def test_prose_files_and_file_order_do_not_count():
    one = [("b.py", "x = 1\n"), ("a.py", "y = 2\n"), ("explanation.md", "Why.")]
    other = [("a.py", "y = 2\n"), ("b.py", "x = 1\n"), ("EXPLANATION.txt", "Other reasons.")]

    assert solution_key(one) == solution_key(other)
    assert is_explanation("notes/Explanation.md") and not is_explanation("explanation.py")


def test_an_export_keeps_the_first_copy_of_a_solution_per_task_and_counts_the_rest(world):
    task, other_task = world.tasks[0], world.tasks[1]
    second_version = republish(task, "Compute **relu** (revised).")
    again = graded(second_version, world.submitter, {"solution.py": solution(0) + "\n\n# same\n"})
    elsewhere = graded(other_task.current_version, world.submitter, {"solution.py": solution(90)})
    twin = graded(task.current_version, world.submitter, {"kernel.py": solution(90)})

    snapshot = build(define(world.owner, format="sft"), world.owner)

    ids = {row["submission_id"] for row in all_rows(snapshot)}
    firsts = {s[0].pk for s in world.submissions.values()}
    near_copies = {s[4].pk for s in world.submissions.values()}
    assert firsts <= ids
    assert not near_copies & ids
    assert again.pk not in ids, "a copy submitted to a later version of the task"
    # The same code for another task is another row.
    assert {elsewhere.pk, twin.pk} <= ids
    assert snapshot.manifest["skipped"]["duplicate"] == len(world.tasks) + 1


def test_the_export_uses_the_key_stored_on_arrival(world):
    """Two different solutions that were given the same key on arrival are one
    solution to the export: it reads the key, it does not make it again."""
    task = world.tasks[2]
    first = graded(task.current_version, world.submitter, {"solution.py": solution(70)})
    other = graded(task.current_version, world.submitter, {"solution.py": solution(71)})
    Submission.objects.filter(pk=other.pk).update(code_key=first.code_key)

    snapshot = build(define(world.owner, format="sft"), world.owner)

    ids = {row["submission_id"] for row in all_rows(snapshot)}
    assert first.pk in ids and other.pk not in ids
    assert snapshot.manifest["skipped"]["duplicate"] == len(world.tasks) + 1


def test_a_submission_without_a_stored_key_is_keyed_by_the_export(world):
    """Rows written past the services have no key: the export makes it."""
    task = world.tasks[3]
    first_copy = world.submissions[task.slug][0]
    again = graded(task.current_version, world.submitter, {"b.py": "#x\n" + solution(0)})
    Submission.objects.filter(pk__in=[first_copy.pk, again.pk]).update(code_key=None)

    snapshot = build(define(world.owner, format="sft"), world.owner)

    ids = {row["submission_id"] for row in all_rows(snapshot)}
    assert first_copy.pk in ids and again.pk not in ids
    assert snapshot.manifest["skipped"]["duplicate"] == len(world.tasks) + 1


def fresh_version(world):
    """The current version as the database has it (another test may have published
    a version 2 of the first tasks, since rolled back, into the shared objects)."""
    return Task.objects.get(pk=world.tasks[5].pk).current_version


def _gelu(name: str) -> str:
    return honest_code("gelu", name)


def test_similar_solutions_that_differ_in_substance_are_separate_rows(world):
    """They share imports, the interface, the launch boilerplate and most lines."""
    version = fresh_version(world)
    flat = _gelu("sigmoid_form.py")
    bigger_blocks = flat.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=4096")
    exp2 = flat.replace("tl.exp(-2.0 * z)", "tl.exp2(-2.8853900817779268 * z)")
    assert bigger_blocks != flat and exp2 != flat
    made = [
        graded(version, world.submitter, {"solution.py": code})
        for code in (flat, bigger_blocks, exp2, _gelu("clamped_tanh.py"))
    ]

    snapshot = build(define(world.owner, format="sft"), world.owner)

    ids = {row["submission_id"] for row in all_rows(snapshot)}
    assert {s.pk for s in made} <= ids
    assert snapshot.manifest["skipped"]["duplicate"] == len(world.tasks)


def test_a_copy_recommented_reformatted_or_renamed_is_one_row(world):
    version = fresh_version(world)
    original = _gelu("sigmoid_form.py")
    recommented = original.replace('"""GELU, tanh approximation, in one pass.', '"""GELU.').replace(
        "    pid = tl.program_id(axis=0)\n",
        "    # one block per program\n    pid = tl.program_id(axis=0)\n",
    )
    reformatted = original.replace(
        "(x_ptr, y_ptr, n_elements, BLOCK_SIZE", "(\n    x_ptr, y_ptr, n_elements, BLOCK_SIZE"
    )
    first = graded(version, world.submitter, {"solution.py": original})
    copies = [
        graded(version, world.submitter, files)
        for files in (
            {"solution.py": original.replace("# noqa: E731", "# one program per block")},
            {"kernel.py": reformatted},
            {"solution.py": original, "explanation.md": "Sigmoid form: no inf / inf.\n"},
        )
    ]
    assert recommented != original  # a docstring is code: that one is not a copy
    different = graded(version, world.submitter, {"solution.py": recommented})

    snapshot = build(define(world.owner, format="sft"), world.owner)

    ids = {row["submission_id"] for row in all_rows(snapshot)}
    assert first.pk in ids and different.pk in ids
    assert not {c.pk for c in copies} & ids
    assert snapshot.manifest["skipped"]["duplicate"] == len(world.tasks) + len(copies)
    same_as = {
        r.submission_id: r.detail["same_as"] for r in snapshot.left_out.filter(reason="duplicate")
    }
    assert all(same_as[c.pk] == first.pk for c in copies)


def test_a_copy_of_a_row_left_out_for_hidden_content_is_not_called_a_duplicate(world):
    version = fresh_version(world)
    first = graded(version, world.submitter, {"solution.py": EXPERT})
    again = graded(version, world.submitter, {"kernel.py": "# again\n" + EXPERT})

    snapshot = build(define(world.owner, format="sft"), world.owner)

    assert snapshot.manifest["skipped"]["hidden_content"] == 2
    withheld = set(
        snapshot.left_out.filter(reason="hidden_content").values_list("submission", flat=True)
    )
    assert withheld == {first.pk, again.pk}


def test_the_snapshot_page_lists_duplicates_with_the_row_each_repeats(world, client):
    snapshot = build(define(world.owner, format="sft"), world.owner)
    client.force_login(world.owner)

    page = client.get(f"/exports/snapshots/{snapshot.pk}/").content.decode()

    assert f"Duplicate of an exported row: {len(world.tasks)}" in page
    for submissions in world.submissions.values():
        copy, first = submissions[4], submissions[0]
        assert f"#{copy.pk}" in page
        assert f"Same code as submission #{first.pk}, which was kept." in page


def test_the_dataset_card_says_what_a_duplicate_is_and_how_many_were_left_out(world):
    snapshot = build(define(world.owner, format="sft"), world.owner)

    card = (snapshot_folder(snapshot) / "README.md").read_text(encoding="utf-8")

    assert "## What is left out" in card
    assert "- duplicate: a solution whose code is the same as a row already written" in card
    assert "once comments and whitespace are removed" in card
    assert f"- duplicate: {len(world.tasks)}" in card
