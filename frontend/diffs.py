"""Line diffs between two sets of files (path -> text), for unified and side-by-side views.

Both views come from the same ``difflib.SequenceMatcher`` hunks, so they always
agree on what changed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

CONTEXT_LINES = 3


@dataclass(frozen=True)
class DiffLine:
    """A line of a unified diff. ``kind``: context, add, del, or hunk (a separator)."""

    kind: str
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass(frozen=True)
class SplitRow:
    """A row of a side-by-side diff; a side is empty where the other side added lines."""

    kind: str  # context, change, hunk
    old_no: int | None = None
    old_text: str | None = None
    new_no: int | None = None
    new_text: str | None = None


@dataclass
class FileDiff:
    path: str
    status: str  # added, removed, changed
    added: int = 0
    removed: int = 0
    lines: list[DiffLine] = field(default_factory=list)
    rows: list[SplitRow] = field(default_factory=list)


def diff_files(old: dict[str, str], new: dict[str, str]) -> list[FileDiff]:
    """A diff per path that differs, in path order; unchanged files are left out."""
    diffs: list[FileDiff] = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        status = "added" if before is None else "removed" if after is None else "changed"
        diffs.append(_diff_one(path, status, before or "", after or ""))
    return diffs


def _diff_one(path: str, status: str, before: str, after: str) -> FileDiff:
    old_lines, new_lines = before.splitlines(), after.splitlines()
    result = FileDiff(path=path, status=status)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for index, group in enumerate(matcher.get_grouped_opcodes(CONTEXT_LINES)):
        first = group[0]
        header = f"@@ -{first[1] + 1} +{first[3] + 1} @@"
        if index or first[1] or first[3]:
            result.lines.append(DiffLine("hunk", header))
            result.rows.append(SplitRow("hunk", old_text=header))
        for tag, i1, i2, j1, j2 in group:
            _add_opcode(result, tag, old_lines, new_lines, (i1, i2, j1, j2))
    return result


def _add_opcode(
    result: FileDiff,
    tag: str,
    old_lines: list[str],
    new_lines: list[str],
    span: tuple[int, int, int, int],
) -> None:
    i1, i2, j1, j2 = span
    if tag == "equal":
        for offset in range(i2 - i1):
            old_no, new_no = i1 + offset + 1, j1 + offset + 1
            text = old_lines[i1 + offset]
            result.lines.append(DiffLine("context", text, old_no, new_no))
            result.rows.append(SplitRow("context", old_no, text, new_no, text))
        return
    removed = [(i + 1, old_lines[i]) for i in range(i1, i2)]
    added = [(j + 1, new_lines[j]) for j in range(j1, j2)]
    result.removed += len(removed)
    result.added += len(added)
    result.lines.extend(DiffLine("del", text, old_no=no) for no, text in removed)
    result.lines.extend(DiffLine("add", text, new_no=no) for no, text in added)
    for row in range(max(len(removed), len(added))):
        old: tuple[int | None, str | None] = removed[row] if row < len(removed) else (None, None)
        new: tuple[int | None, str | None] = added[row] if row < len(added) else (None, None)
        result.rows.append(SplitRow("change", old[0], old[1], new[0], new[1]))
