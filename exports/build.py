"""Building a dataset folder from a definition's spec.

One pass over the matching task versions in (slug, number) order, streaming
each version's submissions chunk by chunk. Each row goes to the split of its
task and is written at once. What is dropped on the way is counted:

- ``duplicate``: a solution whose code is the same as a row of the same task
  already written: equal after comments and whitespace are removed, whatever
  its file names, file order or explanation (``Submission.code_key``, made by
  ``submissions.fingerprint.solution_key`` on arrival). Code that differs in
  anything else, a name, a constant, a docstring, is another solution, however
  much boilerplate it shares. Only rows written count: a copy of a row that was
  left out is judged on its own. All versions of a task are consecutive, so the
  keys seen live for one task only.
- ``hidden_content``: a row whose text quotes a hidden task file
  (``guard.HiddenGuard``).
- ``score_range``: outside the definition's score range.

Besides the counts (in the manifest), up to ``EXAMPLES_PER_REASON`` examples per
reason are kept (``BuildResult.left_out``) for the snapshot page: which
submission, and where (the row it repeats, its score, or the lines that quote
which lines of which hidden file).
"""

from __future__ import annotations

import bisect
import gc
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.db.models import Q

from graders.verdicts import Verdict
from submissions.fingerprint import is_explanation, solution_key

from . import source
from .formats import (
    Side,
    VersionStats,
    critique_row,
    preference_row,
    rl_row,
    schema_for,
    sft_row,
)
from .guard import Quote
from .models import ExportFormat, LeftOutReason
from .source import SubmissionData, VersionData
from .spec import SPLITS, Spec
from .splits import split_of
from .text import render_solution
from .writer import ArchivePart, SplitWriter

Row = tuple[VersionData, dict[str, Any]]
Progress = Callable[[int, int, int], None]  # items done, items total, rows written
EXPLANATION = "explanation"  # the rubric criterion that approves an explanation
PAIR_CHUNK = 1000
EPSILON = 1e-9
YOUNG_COLLECTION_EVERY = 50_000  # new container objects; Python's default is 700
EXAMPLES_PER_REASON = 100


@dataclass(frozen=True, slots=True)
class LeftOut:
    """One row left out, and why (see ``exports.models.LeftOutRow``)."""

    reason: str
    task_version_id: int
    submission_id: int | None
    detail: dict[str, Any]


@dataclass
class BuildResult:
    schema: pa.Schema
    rows: dict[str, int]
    tasks: dict[str, int]
    task_versions: dict[str, int]
    skipped: dict[str, int]
    items_total: int
    files: list[Path] = field(default_factory=list)
    # The JSON lines' tar.gz members and SHA-256 digests, made during the build.
    archive_parts: dict[Path, ArchivePart] = field(default_factory=dict)
    sha256: dict[Path, str] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)


class Builder:
    def __init__(
        self, spec: Spec, folder: Path, *, identities: bool, progress: Progress | None = None
    ) -> None:
        self.spec = spec
        self.folder = folder
        self.identities = identities and spec.format != ExportFormat.RL
        self.schema = schema_for(spec.format, identities=self.identities)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="export-writer")
        parts = folder.parent / "archive-parts"  # outside the dataset folder
        self.writers = {
            name: SplitWriter(folder, name, self.schema, self._pool, parts) for name in SPLITS
        }
        self.skipped: Counter[str] = Counter()
        self.left_out: list[LeftOut] = []
        self.tasks: dict[str, set[str]] = {name: set() for name in SPLITS}
        self.versions: dict[str, set[int]] = {name: set() for name in SPLITS}
        self._progress = progress
        self._seen: dict[bytes, int] = {}  # code key -> the submission written with it
        self._seen_task = ""
        self.done = self.total = 0

    def run(self) -> BuildResult:
        try:
            with _collector_relaxed():
                return self._run()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self) -> BuildResult:
        versions = source.versions_for(self.spec.filters)
        self.total = (
            source.submissions_matching(
                self.spec.filters, [v.id for v in versions], self._constraint()
            ).count()
            if versions
            else 0
        )
        self._tick(0)
        make = {
            ExportFormat.SFT: self._sft,
            ExportFormat.PREFERENCE: self._preference,
            ExportFormat.RL: self._rl,
            ExportFormat.CRITIQUE: self._critique,
        }[ExportFormat(self.spec.format)]
        splits = {
            v.id: split_of(v.slug, seed=self.spec.seed, ratios=self.spec.split) for v in versions
        }
        for version, row in make(versions):
            split = splits[version.id]
            self.writers[split].write(row)
            self.tasks[split].add(version.slug)
            self.versions[split].add(version.id)
        files = [path for name in SPLITS for path in self.writers[name].close()]
        self._tick(0, final=True)
        return BuildResult(
            schema=self.schema,
            rows={name: self.writers[name].rows for name in SPLITS},
            tasks={name: len(self.tasks[name]) for name in SPLITS},
            task_versions={name: len(self.versions[name]) for name in SPLITS},
            skipped={key: self.skipped[key] for key in sorted(self.skipped)},
            items_total=self.total,
            files=files,
            archive_parts={
                writer.jsonl_path: writer.archive_part
                for writer in self.writers.values()
                if writer.rows
            },
            sha256={
                writer.jsonl_path: writer.jsonl_sha256.hexdigest()
                for writer in self.writers.values()
                if writer.rows
            },
            left_out=self.left_out,
        )

    # Shared steps ------------------------------------------------------------------------------

    def _constraint(self) -> Q | None:
        if self.spec.format == ExportFormat.SFT:
            return source.accepted_constraint()
        if self.spec.format == ExportFormat.CRITIQUE:
            return source.reviewed_constraint()
        return None

    def _chunks(
        self, versions: Sequence[VersionData], *, files: bool = True, reviews: bool = False
    ) -> Iterator[tuple[VersionData, list[SubmissionData]]]:
        for version, chunk in source.submission_chunks(
            versions,
            self.spec.filters,
            constraint=self._constraint(),
            identities=self.identities,
            files=files,
            reviews=reviews,
            chunk_size=source.CHUNK,
        ):
            if version.slug != self._seen_task:  # a task's versions come one after another
                self._seen_task, self._seen = version.slug, {}
            yield version, chunk
            self._tick(len(chunk))

    def _tick(self, items: int, *, final: bool = False) -> None:
        self.done += items
        if self._progress is not None:
            rows = sum(writer.rows for writer in self.writers.values())
            self._progress(self.total if final else self.done, self.total, rows)

    def _leave_out(
        self, reason: LeftOutReason, version: VersionData, submission: int | None, **detail: Any
    ) -> None:
        self.skipped[reason.value] += 1
        if self.skipped[reason.value] <= EXAMPLES_PER_REASON:
            self.left_out.append(LeftOut(reason.value, version.id, submission, detail))

    def _in_range(self, version: VersionData, submission: SubmissionData) -> bool:
        low, high = self.spec.filters.score_min, self.spec.filters.score_max
        if (low is not None and submission.score < low - EPSILON) or (
            high is not None and submission.score > high + EPSILON
        ):
            self._leave_out(
                LeftOutReason.SCORE_RANGE,
                version,
                submission.id,
                score=submission.score,
                min=low,
                max=high,
            )
            return False
        return True

    def _first_copy(self, version: VersionData, submission: SubmissionData) -> bytes | None:
        """The submission's code key, or None when a row written earlier has its code."""
        key = submission.code_key or solution_key(submission.files)
        written = self._seen.get(key)
        if written is not None:
            self._leave_out(LeftOutReason.DUPLICATE, version, submission.id, same_as=written)
            return None
        return key

    def _clean(
        self, version: VersionData, submission: int | None, parts: Sequence[tuple[str, str]]
    ) -> bool:
        quote = version.guard.find(parts)
        if quote is not None:
            self._quoting(version, submission, quote)
            return False
        return True

    def _quoting(self, version: VersionData, submission: int | None, quote: Quote) -> None:
        self._leave_out(
            LeftOutReason.HIDDEN_CONTENT,
            version,
            submission,
            part=quote.part,
            lines=list(quote.lines),
            hidden_path=quote.hidden_path,
            hidden_lines=list(quote.hidden_lines),
            matched=quote.matched,
        )

    # Formats -----------------------------------------------------------------------------------

    def _sft(self, versions: Sequence[VersionData]) -> Iterator[Row]:
        approvals = {v.id: _explanation_points(v) for v in versions}
        for version, chunk in self._chunks(versions):
            for submission in chunk:
                code = [f for f in submission.files if not is_explanation(f[0])]
                if not code or not self._in_range(version, submission):
                    continue
                key = self._first_copy(version, submission)
                if key is None:
                    continue
                explanation = self._explanation(submission, approvals[version.id])
                parts = [*code, *([("explanation", explanation)] if explanation else [])]
                if self._clean(version, submission.id, parts):
                    self._seen[key] = submission.id
                    text = render_solution(code, explanation)
                    yield version, sft_row(version, submission, text, explained=bool(explanation))

    def _explanation(self, submission: SubmissionData, approval: float | None) -> str:
        """The submission's explanation file, when reviewers gave the ``explanation``
        criterion at least half its points (their consensus, after a final review)."""
        if approval is None or not self.spec.options.get("include_explanations"):
            return ""
        if submission.decision is None or submission.awarded.get(EXPLANATION, 0.0) < approval:
            return ""
        return next((text for path, text in submission.files if is_explanation(path)), "")

    def _rl(self, versions: Sequence[VersionData]) -> Iterator[Row]:
        stats = {v.id: VersionStats() for v in versions}
        for version, chunk in self._chunks(versions, files=False):
            for submission in chunk:
                if self._in_range(version, submission):
                    counts = stats[version.id]
                    counts.submissions += 1
                    counts.accepted += submission.verdict == Verdict.ACCEPTED
                    counts.score_sum += submission.score
        for version in versions:  # every version, with submissions or not
            row = rl_row(version, stats[version.id])
            if self._clean(version, None, [("rubric", row["rubric"])]):
                yield version, row

    def _critique(self, versions: Sequence[VersionData]) -> Iterator[Row]:
        rubric_quotes = {v.id: v.guard.find([("rubric", v.rubric)]) for v in versions}
        for version, chunk in self._chunks(versions, reviews=True):
            for submission in chunk:
                if not submission.reviews or not self._in_range(version, submission):
                    continue  # reviews of an earlier grading only: nothing current
                key = self._first_copy(version, submission)
                if key is None:
                    continue
                rubric_quote = rubric_quotes[version.id]
                if rubric_quote is not None:
                    self._quoting(version, submission.id, rubric_quote)
                    continue
                reviews = [
                    (f"review {n}", text)
                    for n, review in enumerate(submission.reviews, start=1)
                    for text in review.texts()
                ]
                if self._clean(version, submission.id, [*submission.files, *reviews]):
                    self._seen[key] = submission.id
                    text = render_solution(submission.files)
                    yield version, critique_row(version, submission, text)

    def _preference(self, versions: Sequence[VersionData]) -> Iterator[Row]:
        """First the version's candidates (scores, no text kept), then its pairs."""
        current: VersionData | None = None
        sides: dict[int, Side] = {}
        for version, chunk in self._chunks(versions):
            if current is not None and version.id != current.id:
                yield from self._pair_rows(current, sides)
                sides = {}
            current = version
            for submission in chunk:
                if not self._in_range(version, submission):
                    continue
                key = self._first_copy(version, submission)
                if key is not None and self._clean(version, submission.id, submission.files):
                    self._seen[key] = submission.id
                    sides[submission.id] = Side(
                        id=submission.id,
                        model=submission.model,
                        verdict=submission.verdict,
                        score=submission.score,
                        scored_by=submission.scored_by,
                        identity=submission.identity,
                    )
        if current is not None:
            yield from self._pair_rows(current, sides)

    def _pair_rows(self, version: VersionData, sides: dict[int, Side]) -> Iterator[Row]:
        pairs = preference_pairs(
            sides,
            source.pairwise_votes(version.id),
            seed=f"{self.spec.seed}:{version.slug}:{version.number}",
            margin=float(self.spec.options["margin"]),
            per_submission=int(self.spec.options["pairs_per_submission"]),
        )
        for start in range(0, len(pairs), PAIR_CHUNK):
            batch = pairs[start : start + PAIR_CHUNK]
            needed = sorted({pk for pair in batch for pk in (pair.chosen, pair.rejected)})
            fetched = source.files_of(needed)
            texts = {pk: render_solution(files) for pk, files in fetched.items()}
            for pair in batch:
                yield (
                    version,
                    preference_row(
                        version,
                        (sides[pair.chosen], texts[pair.chosen]),
                        (sides[pair.rejected], texts[pair.rejected]),
                        source=pair.source,
                        votes=pair.votes,
                    ),
                )


@contextmanager
def _collector_relaxed() -> Iterator[None]:
    """A build makes millions of short-lived objects (rows, their dicts and lists)
    and no reference cycles worth chasing: reference counting frees them. At
    Python's default a young collection runs every 700 new objects and, now and
    then, a full one walks every object in the process: a tenth of a build's time.
    For the build, young collections wait for ``YOUNG_COLLECTION_EVERY``."""
    threshold = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def _explanation_points(version: VersionData) -> float | None:
    for criterion in version.criteria:
        if criterion.key == EXPLANATION and criterion.points > 0:
            return criterion.points / 2
    return None


# Preference pairs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    chosen: int
    rejected: int
    source: str  # "pairwise" or "score_margin"
    votes: int  # reviewers' judgements for this preference (pairwise only)


def preference_pairs(
    sides: dict[int, Side],
    votes: Sequence[tuple[int, int, str]],
    *,
    seed: str,
    margin: float,
    per_submission: int,
) -> list[Pair]:
    """Pairs from reviewers' pairwise judgements first, then from score differences.

    Judgements of the same two submissions are tallied; the side with more votes
    is chosen, and a draw (or a tie verdict) makes no pair. Score pairs form
    between submissions whose scores come from the same source (reviewers' or
    the grader's alone), at least ``margin`` apart: each submission, in id order,
    is chosen over up to ``per_submission`` lower ones, picked at random by a
    generator seeded with ``seed`` and the score source, so the same data gives
    the same pairs. A pair reviewers judged is never also a score pair.
    """
    judged = _judged_pairs(sides, votes)
    taken = {frozenset((p.chosen, p.rejected)) for p in judged}
    by_source: dict[str, list[Side]] = {}
    for side in sides.values():
        by_source.setdefault(side.scored_by, []).append(side)
    scored: list[Pair] = []
    for scored_by in sorted(by_source):
        group = by_source[scored_by]
        rng = random.Random(f"{seed}:{scored_by}")
        ascending = sorted(group, key=lambda s: (s.score, s.id))
        scores = [s.score for s in ascending]
        for chosen in sorted(group, key=lambda s: s.id):
            below = bisect.bisect_right(scores, chosen.score - max(margin, EPSILON) + EPSILON)
            picks: set[int] = set()
            while len(picks) < min(per_submission, below):
                picks.add(rng.randrange(below))
            for index in sorted(picks):
                rejected = ascending[index]
                if frozenset((chosen.id, rejected.id)) not in taken:
                    scored.append(Pair(chosen.id, rejected.id, "score_margin", 0))
    scored.sort(key=lambda p: (p.chosen, p.rejected))
    return judged + scored


def _judged_pairs(sides: dict[int, Side], votes: Sequence[tuple[int, int, str]]) -> list[Pair]:
    tally: dict[tuple[int, int], Counter[int]] = {}
    for a, b, winner in votes:
        if winner not in ("a", "b") or a not in sides or b not in sides:
            continue
        tally.setdefault((min(a, b), max(a, b)), Counter())[a if winner == "a" else b] += 1
    pairs = []
    for (low, high), counts in tally.items():
        if counts[low] != counts[high]:
            chosen, rejected = (low, high) if counts[low] > counts[high] else (high, low)
            pairs.append(Pair(chosen, rejected, "pairwise", counts[chosen]))
    pairs.sort(key=lambda p: (p.chosen, p.rejected))
    return pairs
