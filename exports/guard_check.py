"""Measuring the hidden-content guard on the catalog (``bench/export.py --guard``
prints the figures, ``tests/exports/test_guard.py`` asserts them).

Two corpora, per catalog task:

- *honest*: solutions written for the task from its statement alone, in several
  styles, none derived from the hidden files (``HONEST``, one folder per task).
  Every one must pass: a row withheld here is a false positive.
- *pasted*: every distinctive passage of every hidden file of the task (its
  reference, expert solution, negatives and hidden tests) spliced into one of
  the task's honest solutions. Every one must be caught.

A passage is ``PASSAGE_LINES`` consecutive substantive lines of a hidden file
(``guard.substantive``: at least ``guard.MIN_CHARS`` non-space characters and
not an import or interface line), with whatever blank or short lines lie
between them. It is *distinctive* when at least ``DISTINCTIVE_LINES`` of them
appear nowhere public and in no other task: not in any task's statement or
prompt files, and not in any file of another catalog task. That definition
uses only the catalog, not the guard's built-in list of idioms, so a list that
swallowed real hidden lines would show up as missed passages.

Guards are built as an export builds them: common lines from every task of
the catalog (``shared``), and also as for a task alone on the platform, with
only the built-in idioms (``alone``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from graders import registry
from tasks.bundle import load_bundle

from .guard import BUILT_IN, Common, CommonLines, HiddenGuard, Quote, key, substantive, tokens

PASSAGE_LINES = 6
DISTINCTIVE_LINES = 4
SEED = 20261201
ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "reference_solutions"
HONEST = ROOT / "tests" / "exports" / "corpus" / "honest"
# What an honest file is submitted as: a kernel's solution module, a debugging
# task's fix (a diff), a profiling task's answer, a serving task's engine config.
SUBMITTED_AS = {
    ".py": "solution.py",
    ".diff": "fix.diff",
    ".json": "answer.json",
    ".toml": "engine.toml",
}


@dataclass
class CatalogTask:
    slug: str
    public: list[str]  # statement and prompt files
    hidden: list[tuple[str, str]]  # path, content


@dataclass
class Passage:
    slug: str
    path: str  # the hidden file
    first: int  # its first line (1-based)
    text: str


@dataclass
class Figures:
    mode: str
    honest: int = 0
    honest_withheld: list[tuple[str, str, Quote]] = field(default_factory=list)
    pasted: int = 0
    pasted_missed: list[Passage] = field(default_factory=list)
    # Passages whose lines need not hold a name of their own (see ``passages``).
    lines_only: int = 0
    lines_only_missed: list[Passage] = field(default_factory=list)
    tasks: int = 0
    hidden_files: int = 0

    @property
    def false_positives(self) -> int:
        return len(self.honest_withheld)

    @property
    def caught(self) -> int:
        return self.pasted - len(self.pasted_missed)

    @property
    def recall(self) -> float:
        return self.caught / self.pasted if self.pasted else 1.0

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "tasks": self.tasks,
            "hidden_files": self.hidden_files,
            "honest_submissions": self.honest,
            "honest_withheld": self.false_positives,
            "pasted_submissions": self.pasted,
            "pasted_caught": self.caught,
            "recall": round(self.recall, 4),
            "lines_only_pasted": self.lines_only,
            "lines_only_caught": self.lines_only - len(self.lines_only_missed),
            "withheld_examples": [
                f"{slug}/{name}: lines {q.lines[0]}-{q.lines[1]} quote {q.hidden_path} "
                f"lines {q.hidden_lines[0]}-{q.hidden_lines[1]}"
                for slug, name, q in self.honest_withheld[:10]
            ],
            "missed_examples": [f"{p.slug}/{p.path}:{p.first}" for p in self.pasted_missed[:10]],
        }


def catalog(root: Path = CATALOG) -> list[CatalogTask]:
    tasks = []
    for folder in sorted(p for p in root.iterdir() if (p / "task.toml").exists()):
        bundle = load_bundle(folder)
        answers = registry.get(bundle.kind).answer_paths(
            bundle.grading, {f.path: f.role for f in bundle.files}
        )
        tasks.append(
            CatalogTask(
                slug=bundle.slug,
                public=[f.text for f in bundle.files if f.visibility == "prompt"],
                hidden=[
                    (f.path, f.text)
                    for f in bundle.files
                    if f.visibility != "prompt" and f.path not in answers
                ],
            )
        )
    return tasks


def honest_corpus(root: Path = HONEST) -> dict[str, list[tuple[str, str]]]:
    """Task slug -> [(file name, content)], in name order."""
    corpus: dict[str, list[tuple[str, str]]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        corpus[folder.name] = [
            (path.name, path.read_text(encoding="utf-8"))
            for path in sorted(folder.iterdir())
            if path.suffix in SUBMITTED_AS
        ]
    return corpus


def shared_common(tasks: list[CatalogTask]) -> Common:
    common = CommonLines()
    for task in tasks:
        for text in task.public:
            common.add(task.slug, text, public=True)
        for _, text in task.hidden:
            common.add(task.slug, text, public=False)
    return common.frozen()


def passages(tasks: list[CatalogTask], *, specific: bool = True) -> Iterator[Passage]:
    """Every distinctive passage of every hidden file, each text once per task.

    A line of a passage counts as distinctive when it appears in no public file
    and in no other task's files and, if ``specific``, also holds a name, word
    or number found in no public file and no other task's files."""
    public_lines: set[str] = set()
    public_tokens: set[str] = set()
    for task in tasks:
        for text in task.public:
            public_lines.update(key(line) for line in text.split("\n"))
            public_tokens.update(tokens(text))
    lines_of = {
        t.slug: {key(line) for _, text in t.hidden for line in text.split("\n")} for t in tasks
    }
    tokens_of = {t.slug: {tok for _, text in t.hidden for tok in tokens(text)} for t in tasks}
    for task in tasks:
        other_lines = public_lines.union(*(v for k, v in lines_of.items() if k != task.slug))
        other_tokens = public_tokens.union(*(v for k, v in tokens_of.items() if k != task.slug))
        seen: set[str] = set()
        for path, text in task.hidden:
            lines = text.split("\n")
            starts = [i for i, line in enumerate(lines) if substantive(line)]
            for n in range(len(starts) - PASSAGE_LINES + 1):
                chosen = starts[n : n + PASSAGE_LINES]
                own = sum(
                    _distinctive(lines[i], other_lines, other_tokens if specific else None)
                    for i in chosen
                )
                if own < DISTINCTIVE_LINES:
                    continue
                passage = "\n".join(lines[chosen[0] : chosen[-1] + 1])
                if passage not in seen:
                    seen.add(passage)
                    yield Passage(task.slug, path, chosen[0] + 1, passage)


def _distinctive(line: str, other_lines: set[str], other_tokens: set[str] | None) -> bool:
    if key(line) in other_lines:
        return False
    return other_tokens is None or any(tok not in other_tokens for tok in tokens(line))


def splice(host: str, passage: str, rng: random.Random) -> str:
    """``passage`` inserted between two lines of ``host``, indented or not."""
    lines = host.split("\n")
    at = rng.randrange(len(lines) + 1)
    if rng.random() < 0.5:
        passage = "\n".join("    " + line if line else line for line in passage.split("\n"))
    return "\n".join([*lines[:at], passage, *lines[at:]])


def measure(mode: str = "shared", *, root: Path = CATALOG, honest_root: Path = HONEST) -> Figures:
    """The guard's false positives on the honest corpus and recall on the pasted one."""
    tasks = catalog(root)
    honest = honest_corpus(honest_root)
    common = shared_common(tasks) if mode == "shared" else BUILT_IN
    guards = {t.slug: HiddenGuard(t.hidden, t.public, common) for t in tasks}
    figures = Figures(mode=mode, tasks=len(tasks), hidden_files=sum(len(t.hidden) for t in tasks))
    for slug, files in honest.items():
        for name, text in files:
            figures.honest += 1
            quote = guards[slug].find([(SUBMITTED_AS[Path(name).suffix], text)])
            if quote is not None:
                figures.honest_withheld.append((slug, name, quote))
    rng = random.Random(SEED)
    for specific, missed in ((True, figures.pasted_missed), (False, figures.lines_only_missed)):
        for number, passage in enumerate(passages(tasks, specific=specific)):
            hosts = honest.get(passage.slug) or [("empty.py", "")]
            host_name, host = hosts[number % len(hosts)]
            spliced = splice(host, passage.text, rng)
            if specific:
                figures.pasted += 1
            else:
                figures.lines_only += 1
            submitted_as = SUBMITTED_AS[Path(host_name).suffix]
            if guards[passage.slug].find([(submitted_as, spliced)]) is None:
                missed.append(passage)
    return figures
