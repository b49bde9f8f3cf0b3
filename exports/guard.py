"""A last check that no row quotes a hidden task file.

Rows are built only from what solvers see (the statement and prompt files), the
submissions' own files, what reviewers wrote and an allow-list of grading
fields; hidden files and grading reports' free text are never read into a row.
But a submission or a reviewer's feedback can still quote a hidden file (a
reviewer sees them all). ``HiddenGuard`` flags text holding a run of
lines of a hidden file that no prompt file also has, one after another (lines
too short to prove anything, and lines a prompt file shows too, are passed
over); such rows are withheld and counted in the manifest.
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_LINE_CHARS = 12  # shorter lines ("return x", "import torch") prove nothing
RUN_LINES = 3  # consecutive hidden lines that make a quote


def _lines(text: str) -> Iterable[str]:
    for raw in text.splitlines():
        line = raw.strip()
        if len(line) >= MIN_LINE_CHARS:
            yield line


class HiddenGuard:
    def __init__(self, hidden: Iterable[str], public: Iterable[str]) -> None:
        shown = {line for text in public for line in _lines(text)}
        self.shown = shown
        self.lines: set[str] = set()
        shortest = RUN_LINES
        for text in hidden:
            own = {line for line in _lines(text) if line not in shown}
            if own:
                # A hidden file with fewer distinctive lines is caught by all of them.
                shortest = min(shortest, len(own))
                self.lines |= own
        self.run = shortest

    def quotes_hidden(self, *texts: str) -> bool:
        if not self.lines:
            return False
        for text in texts:
            # Fast path (sets, in C): too few hidden lines anywhere in the text for a run.
            if len(self.lines.intersection(map(str.strip, text.splitlines()))) < self.run:
                continue
            run = 0
            for line in _lines(text):
                if line in self.lines:
                    run += 1
                    if run >= self.run:
                        return True
                elif line not in self.shown:
                    run = 0
        return False
