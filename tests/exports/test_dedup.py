"""Exact and near-duplicate solutions are removed: the same code, recommented,
reformatted or renamed, is one solution."""

from __future__ import annotations

from submissions.fingerprint import is_explanation, normalise, solution_key
from submissions.models import Submission
from tests.exports.conftest import all_rows, build, define, graded, republish, solution

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
