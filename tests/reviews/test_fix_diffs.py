"""A debugging fix's diff, as the review page shows it: read file by file from the
unified diff the grader applied, numbered from its hunks."""

from pathlib import Path

from reviews.rendering import unified_diff_files

CATALOG = Path(__file__).resolve().parents[2] / "reference_solutions"


def test_the_catalog_fix_reads_as_one_file_numbered_from_its_hunk():
    text = (CATALOG / "debug-softmax-overflow" / "fix.diff").read_text()

    ((old, new, rows),) = unified_diff_files(text)

    assert (old, new) == ("softmax.py", "softmax.py")
    assert rows[0].kind == "hunk" and rows[0].text.startswith("@@ -6,7 +6,10 @@")
    removed = [(r.old_no, r.text) for r in rows if r.kind == "del"]
    assert removed == [(9, "    weights = torch.exp(logits)")]
    added = [r.new_no for r in rows if r.kind == "add"]
    assert added == [9, 10, 11, 12]
    last = rows[-1]
    assert last.kind == "context" and (last.old_no, last.new_no) == (12, 15)


def test_a_new_file_and_two_files_each_get_their_rows():
    text = (CATALOG / "debug-softmax-overflow" / "bad" / "conftest.diff").read_text()
    text += (CATALOG / "debug-triton-tail-mask" / "fix.diff").read_text()

    files = unified_diff_files(text)

    assert [(old, new) for old, new, _ in files] == [
        ("/dev/null", "conftest.py"),
        ("rmsnorm.py", "rmsnorm.py"),
    ]
    assert [r.new_no for r in files[0][2] if r.kind == "add"] == [1, 2, 3, 4, 5, 6]
    assert sum(r.kind == "add" for r in files[1][2]) == 3
