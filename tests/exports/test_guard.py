"""The hidden-content guard: what makes a quote, what it lets through, and its
figures on the catalog (``exports.guard_check``): no honest solution withheld,
every distinctive passage of a hidden file pasted into honest code caught."""

from __future__ import annotations

import pytest

from exports import guard_check
from exports.guard import CommonLines, HiddenGuard

MODES = ["shared", "alone"]


@pytest.fixture(scope="module")
def figures():
    return {mode: guard_check.measure(mode) for mode in MODES}


def test_every_catalog_task_has_three_honest_solutions_or_more():
    honest = guard_check.honest_corpus()

    assert set(honest) == {task.slug for task in guard_check.catalog()}
    assert all(len(files) >= 3 for files in honest.values())


@pytest.mark.parametrize("mode", MODES)
def test_no_honest_solution_of_the_catalog_is_withheld(figures, mode):
    measured = figures[mode]

    assert measured.honest >= 3 * measured.tasks
    assert measured.honest_withheld == []


@pytest.mark.parametrize("mode", MODES)
def test_every_pasted_passage_of_a_hidden_file_is_caught(figures, mode):
    measured = figures[mode]

    assert measured.pasted >= 500
    assert [f"{p.slug}/{p.path}:{p.first}" for p in measured.pasted_missed] == []


def test_passages_come_from_references_expert_solutions_and_negatives():
    paths = {p.path for p in guard_check.passages(guard_check.catalog())}

    assert {"reference.py", "solution.py"} <= paths
    assert any(path.startswith("bad/") for path in paths)


REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted_logits = x * self.scale - x.amax(dim=-1, keepdim=True)
        weights_unnormalised = shifted_logits.exp()
        return weights_unnormalised / weights_unnormalised.sum(dim=-1, keepdim=True)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, width)]
"""
STATEMENT = "Write `ModelNew(scale)` whose `forward(x)` returns softmax(x * scale)."


def guard(*hidden: tuple[str, str], common=None) -> HiddenGuard:
    if common is None:
        return HiddenGuard(list(hidden), [STATEMENT])
    return HiddenGuard(list(hidden), [STATEMENT], common)


def test_the_interface_imports_and_boilerplate_prove_nothing():
    honest = """import torch
import torch.nn as nn
import triton
import triton.language as tl


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        return y


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, width)]
"""

    assert guard(("reference.py", REFERENCE)).find([("solution.py", honest)]) is None


def test_a_pasted_passage_is_found_with_where_it_is_and_what_it_quotes():
    pasted = "def helper(x, scale):\n" + "\n".join(REFERENCE.splitlines()[10:13]) + "\n"

    quote = guard(("reference.py", REFERENCE)).find([("kernel.py", "x = 1\n"), ("b.py", pasted)])

    assert quote is not None
    assert (quote.part, quote.lines, quote.hidden_path, quote.hidden_lines) == (
        "b.py",
        (2, 4),
        "reference.py",
        (11, 13),
    )


def test_the_lines_must_follow_the_hidden_order_and_an_own_line_breaks_a_run():
    lines = REFERENCE.splitlines()[10:13]
    shuffled = "\n".join([lines[1], lines[0], lines[2]])
    interrupted = "\n".join([lines[0], "my_own_line = compute_it()", lines[1], lines[2]])
    spaced = "\n".join([lines[0], "", "    # ok", lines[1], "}", lines[2]])
    checked = guard(("reference.py", REFERENCE))

    assert checked.find([("a.py", shuffled)]) is None
    assert checked.find([("a.py", interrupted)]) is None
    assert checked.find([("a.py", spaced)]) is not None


def test_lines_the_statement_shows_prove_nothing():
    body = REFERENCE.splitlines()[10:13]
    shown = HiddenGuard([("reference.py", REFERENCE)], [STATEMENT, "\n".join(body[:2])])

    assert shown.find([("a.py", "\n".join(body[:2]))]) is None
    assert guard(("reference.py", REFERENCE)).find([("a.py", "\n".join(body))]) is not None


def test_lines_found_in_two_tasks_are_common_but_a_copied_task_shares_nothing():
    other_task = "def forward(self, x):\n    weights_unnormalised = shifted_logits.exp()\n"
    common = CommonLines()
    common.add("softmax", REFERENCE, public=False)
    common.add("softmax-copy", REFERENCE, public=False)  # the same file under another slug
    common.add("attention", other_task, public=False)
    checked = guard(("reference.py", REFERENCE), common=common.frozen())
    lines = REFERENCE.splitlines()

    # The line both tasks have no longer counts: the forward's three lines are two.
    assert checked.find([("a.py", "\n".join(lines[10:13]))]) is None
    quote = checked.find([("a.py", "\n".join(lines[10:17]))])
    assert quote is not None and quote.matched == 3


def test_lines_of_nothing_but_common_names_weigh_half():
    hidden = "\n".join(f"    out_{n} = tl.load(x_ptr + offs + {n}, mask=mask)" for n in range(3))
    hidden = hidden.replace("out_0", "out").replace("out_1", "acc").replace("out_2", "res")
    generic = HiddenGuard([("solution.py", hidden + "\n" + hidden.replace("offs", "offsets"))], [])
    lines = hidden.splitlines()

    assert generic.find([("a.py", "\n".join(lines))]) is None
    assert generic.find([("a.py", hidden + "\n" + hidden.replace("offs", "offsets"))]) is not None


def test_a_hidden_file_with_few_distinctive_lines_is_quoted_by_all_of_them():
    tiny = HiddenGuard([("tests/cases.py", "one_single_hidden_line = 7\n")], [])

    assert tiny.quotes_hidden("  one_single_hidden_line = 7")
    assert not tiny.quotes_hidden("one_single_hidden_line = 8")


def test_a_small_hidden_file_inside_a_larger_one_is_quoted_as_the_larger_one():
    # A one-line negative fix whose line is also the expert fix's: an honest fix that
    # writes the same line quotes neither; the expert fix pasted still quotes it.
    expert = "\n".join(
        [
            "+        running_loss_total += loss.item()",
            "+        confidence_total += probabilities.amax(dim=-1).mean().item()",
            "+        seen_batches_so_far += 1",
            "+        return running_loss_total / seen_batches_so_far",
        ]
    )
    negative = "+        running_loss_total += loss.item()\n"
    checked = HiddenGuard([("fix.diff", expert), ("bad/half.diff", negative)], [])

    assert not checked.quotes_hidden("running_loss_total += loss.item()")
    assert checked.quotes_hidden("\n".join(line[1:] for line in expert.split("\n")))


def test_a_line_a_hidden_file_repeats_over_and_over_is_filler():
    filler = "padding_value_here = 0  # filler\n" * 40
    repetitive = HiddenGuard([("tests/data.py", filler + "one_real_line_here = 1\n")], [])

    assert not repetitive.quotes_hidden(filler * 10)
    assert repetitive.quotes_hidden("one_real_line_here = 1")


def test_a_hidden_file_another_task_shows_its_solvers_is_public():
    common = CommonLines()
    common.add("softmax", REFERENCE, public=False)
    common.add("softmax-tutorial", REFERENCE, public=True)
    pasted = "\n".join(REFERENCE.splitlines()[10:17])

    assert (
        guard(("reference.py", REFERENCE), common=common.frozen()).find([("a.py", pasted)]) is None
    )


def test_a_diff_compares_as_the_code_it_adds_and_removes():
    body = REFERENCE.splitlines()[10:13]
    public_source = "\n".join(body)
    hidden_fix = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n" + "\n".join(
        ["-" + line for line in body] + ["+" + line.replace("x", "logits") for line in body]
    )
    checked = HiddenGuard([("fix.diff", hidden_fix)], [STATEMENT, public_source])
    own_fix = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,1 @@\n" + "\n".join(
        ["-" + line for line in body] + ["+    return torch.softmax(x * self.scale, dim=-1)"]
    )

    # Removing the public source's lines proves nothing; the hidden fix's added
    # lines, pasted as plain code, are still its own.
    assert checked.find([("fix.diff", own_fix)]) is None
    pasted = "\n".join(line.replace("x", "logits") for line in body)
    assert checked.find([("solution.py", pasted)]) is not None
    # Pasted as the diff's own lines into another diff, indented or not: still its own.
    added = [line for line in hidden_fix.split("\n") if line.startswith("+ ")]
    for indent in ("", "    "):
        inside = own_fix + "\n" + "\n".join(indent + line for line in added)
        assert checked.find([("fix.diff", inside)]) is not None, repr(indent)
