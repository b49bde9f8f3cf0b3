"""Reading what an export needs, in bounded chunks.

Task versions (few) are loaded whole, with their prompt rendered once. Their
submissions are streamed: one query over a server-side cursor
(``iterator(chunk_size=…)``), and for each chunk of ids a handful of ``IN``
queries for files, grading runs, criterion scores and, for critiques, reviews.
Rows are plain tuples (``values_list``), never model instances: at tens of
thousands of rows a second, building model objects would be most of the cost.

Hidden task files are read here for one purpose only: to build each version's
``HiddenGuard`` and the lines common to tasks it leaves aside (``common_lines``).
Their text goes nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import NotSupportedError
from django.db.models import CharField, Exists, F, Func, Lookup, OuterRef, Q, QuerySet

from graders import registry
from graders.verdicts import Verdict
from reviews.models import (
    LineComment,
    OutcomeDecision,
    OutcomeStatus,
    PairwiseJudgement,
    Review,
    ReviewScore,
)
from rubrics.models import CriterionKind, CriterionScore
from submissions.fingerprint import is_explanation
from submissions.models import GradingRun, Submission, SubmissionFile, SubmissionStatus
from tasks.models import FileRole, Task, TaskFile, TaskVersion, Visibility

from .guard import Common, CommonLines, HiddenGuard
from .spec import UNREVIEWED, Filters
from .text import canonical_json, render_prompt

CHUNK = 2000
# Graded, whatever happened next; queued, running, failed and cancelled ones have no grade.
GRADED = (SubmissionStatus.GRADED, SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.REVIEWED)


@dataclass(frozen=True, slots=True)
class CriterionData:
    id: int
    key: str
    title: str
    description: str
    kind: str
    points: int
    levels: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "kind": self.kind,
            "points": self.points,
            "description": self.description,
            "levels": [
                {
                    "score": float(level.get("score", 0)),
                    "descriptor": str(level.get("descriptor", "")),
                }
                for level in self.levels
                if isinstance(level, dict)
            ],
        }


@dataclass(slots=True)
class VersionData:
    id: int
    slug: str
    number: int
    title: str
    kind: str
    difficulty: str
    hardware: str
    tags: list[str]
    grading: dict[str, Any]  # what the kind lets anyone outside the experts see
    prompt: str
    criteria: list[CriterionData]
    guard: HiddenGuard
    rubric: str = ""  # the criteria as canonical JSON, made once

    def __post_init__(self) -> None:
        self.rubric = canonical_json([c.as_dict() for c in self.criteria])

    @property
    def positive_points(self) -> int:
        return sum(c.points for c in self.criteria if c.points > 0)


@dataclass(slots=True)
class ReviewData:
    """One review as the critique format writes it (``criteria`` and
    ``line_comments`` are already the row's dicts)."""

    decision: str
    score: float
    feedback: str
    criteria: list[dict[str, Any]] = field(default_factory=list)
    line_comments: list[dict[str, Any]] = field(default_factory=list)

    def texts(self) -> list[str]:
        """What the reviewer wrote."""
        return [
            self.feedback,
            *(c["comment"] for c in self.criteria),
            *(c["body"] for c in self.line_comments),
        ]


@dataclass(slots=True)
class SubmissionData:
    id: int
    model: str
    verdict: str
    submitted_at: str  # RFC 3339, UTC (``IsoUtc``)
    code_key: bytes | None  # Submission.code_key, as stored (None: compute it)
    decision: str | None  # the final review outcome's decision; None while unreviewed
    outcome_score: float | None  # the final review outcome's score
    identity: tuple[str, str, Any] | None  # submitter, run id, labels
    files: list[tuple[str, str]] = field(default_factory=list)
    run_id: int | None = None
    speedup: float | None = None  # the kernel kind's column, kept for queries
    # The latest run's metrics by name, as its task kind declares them
    # (graders.contract.TaskKind.metrics; GradingRun.metrics).
    metrics: dict[str, float | None] = field(default_factory=dict)
    awarded: dict[str, float] = field(default_factory=dict)
    met: dict[str, bool | None] = field(default_factory=dict)
    score: float = 0.0
    reviews: list[ReviewData] = field(default_factory=list)

    @property
    def scored_by(self) -> str:
        """Whose scores the total holds: reviewers' (final outcome) or the grader's alone."""
        return "review" if self.decision is not None else "grader"


class IdArray:
    """Ids for ``ids_in``, made integers and written out as PostgreSQL array text
    once: a chunk's ids go into several queries."""

    __slots__ = ("ids", "text")

    def __init__(self, ids: Iterable[int]) -> None:
        self.ids = [int(pk) for pk in ids]
        self.text = "{" + ",".join(map(str, self.ids)) + "}"

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


class IdIn(Lookup):  # type: ignore[type-arg]
    """``column IN (ids)``, as ``column = ANY(%s::bigint[])`` with one array
    parameter on PostgreSQL: a chunk's 2,000 ids as 2,000 placeholders cost more to
    build and parse than the query takes to run. The array goes as its text form
    (``IdArray``): psycopg would dump a Python list element by element.
    Made by ``ids_in``."""

    lookup_name = "id_in"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        lhs, params = self.process_lhs(compiler, connection)
        array: IdArray = self.rhs
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s::bigint[])", (*params, array.text)
        return f"{lhs} IN ({', '.join(['%s'] * len(array))})", (*params, *array.ids)


class IsoUtc(Func):
    """A timestamp as RFC 3339 text in UTC, ``2026-11-29T19:30:00.500000Z``, as Python's
    ``isoformat`` writes it (six fraction digits, none for a whole second), made by
    the database: turning each of 100,000 timestamps into a datetime and back into
    text took a tenth of an export. PostgreSQL and SQLite, the two databases the
    platform runs on."""

    output_field = CharField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        text = f"to_char({sql} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        return f"replace({text}, '.000000Z', 'Z')", params

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # Django keeps a datetime in SQLite as UTC text: 2026-11-29 19:30:00[.500000].
        sql, params = compiler.compile(self.source_expressions[0])
        return f"replace({sql}, ' ', 'T') || 'Z'", params

    def as_sql(self, compiler: Any, connection: Any, *args: Any, **extra: Any) -> Any:
        raise NotSupportedError(f"IsoUtc has no SQL for {connection.vendor}")


def ids_in(column: str, ids: Iterable[int] | IdArray) -> IdIn:
    return IdIn(F(column), ids if isinstance(ids, IdArray) else IdArray(ids))


# Task versions -------------------------------------------------------------------------------


def versions_for(filters: Filters) -> list[VersionData]:
    """Matching task versions, ordered by task slug then version number."""
    versions = TaskVersion.objects.select_related("task").prefetch_related(
        "files", "rubric__criteria"
    )
    if filters.kinds:
        versions = versions.filter(kind__in=filters.kinds)
    if filters.difficulties:
        versions = versions.filter(difficulty__in=filters.difficulties)
    if filters.hardware:
        versions = versions.filter(hardware__in=filters.hardware)
    if filters.tasks:
        versions = versions.filter(task__slug__in=filters.tasks)
    if filters.task_versions:
        versions = versions.filter(id__in=filters.task_versions)
    wanted_tags = set(filters.tags)
    # Tags are a JSON list; JSON containment differs between databases, and versions are few.
    chosen = [
        v for v in versions.order_by("task__slug", "number") if wanted_tags <= set(v.tags or [])
    ]
    common = common_lines([v.pk for v in chosen]) if chosen else None
    return [_version_data(v, common) for v in chosen]


def common_lines(version_ids: Sequence[int]) -> Common:
    """Lines and names the platform's tasks show to be common (``guard.CommonLines``):
    from the current version of every task and from the versions exported."""
    common = CommonLines()
    wanted = Q(
        version__in=Task.objects.filter(current_version__isnull=False).values("current_version")
    )
    wanted |= Q(version_id__in=version_ids)
    files = (
        TaskFile.objects.filter(wanted)
        .order_by("version__task__slug", "version__number", "path")
        .values_list("version__task_id", "visibility", "content")
    )
    for task_id, visibility, content in files.iterator(chunk_size=500):
        common.add(task_id, content, public=visibility == Visibility.PROMPT)
    statements = (
        TaskVersion.objects.filter(Q(task__current_version=F("pk")) | Q(pk__in=version_ids))
        .order_by("task__slug", "number")
        .values_list("task_id", "statement")
    )
    for task_id, statement in statements:
        common.add(task_id, statement, public=True)
    return common.frozen()


def _version_data(version: TaskVersion, common: Common | None) -> VersionData:
    files = sorted(version.files.all(), key=lambda f: f.path)
    shown = [f for f in files if f.visibility == Visibility.PROMPT and f.role != FileRole.STATEMENT]
    answers = registry.get(version.kind).answer_paths(
        version.grading or {}, {f.path: f.role for f in files}
    )
    hidden = [
        (f.path, f.content)
        for f in files
        if f.visibility != Visibility.PROMPT and f.path not in answers
    ]
    rubric = getattr(version, "rubric", None)
    criteria = sorted(rubric.criteria.all(), key=lambda c: c.position) if rubric else []
    public = [version.statement, *(f.content for f in shown)]
    return VersionData(
        id=version.pk,
        slug=version.task.slug,
        number=version.number,
        title=version.title,
        kind=version.kind,
        difficulty=version.difficulty,
        hardware=version.hardware,
        tags=sorted(str(t) for t in version.tags or []),
        grading=registry.get(version.kind).public_grading(
            version.grading or {}, {f.path for f in shown}
        ),
        prompt=render_prompt(version.statement, [(f.path, f.content) for f in shown]),
        criteria=[
            CriterionData(
                id=c.pk,
                key=c.key,
                title=c.title,
                description=c.description,
                kind=c.kind,
                points=c.points,
                levels=list(c.levels or []) if c.kind == CriterionKind.HUMAN else [],
            )
            for c in criteria
        ],
        guard=HiddenGuard(hidden, public, common) if common else HiddenGuard(hidden, public),
    )


# Submissions ---------------------------------------------------------------------------------


def submissions_matching(
    filters: Filters, version_ids: Sequence[int], constraint: Q | None = None
) -> QuerySet[Submission]:
    """Graded submissions to these versions that pass the submission filters (all but
    the score range, which needs the scores and is applied as rows are built) and
    the format's own ``constraint``."""
    submissions = Submission.objects.filter(task_version_id__in=version_ids, status__in=GRADED)
    submissions = submissions.exclude(verdict="")
    if constraint is not None:
        submissions = submissions.filter(constraint)
    if filters.verdicts:
        submissions = submissions.filter(verdict__in=filters.verdicts)
    if filters.models:
        submissions = submissions.filter(model_name__in=filters.models)
    if filters.created_after:
        submissions = submissions.filter(created_at__gte=filters.created_after)
    if filters.created_before:
        submissions = submissions.filter(created_at__lt=filters.created_before)
    if filters.review_decisions:
        submissions = submissions.filter(_decision_filter(filters.review_decisions))
    return submissions


def _decision_filter(decisions: Sequence[str]) -> Q:
    wanted = Q(
        review_outcome__status=OutcomeStatus.FINAL,
        review_outcome__decision__in=[d for d in decisions if d != UNREVIEWED],
    )
    if UNREVIEWED in decisions:
        wanted |= _not_final()
    return wanted


def _not_final() -> Q:
    # Positive conditions on the outcome's LEFT JOIN: a negated one would be a subquery.
    return Q(review_outcome__isnull=True) | Q(
        review_outcome__status__in=[OutcomeStatus.PENDING, OutcomeStatus.ADJUDICATION]
    )


def accepted_constraint() -> Q:
    """Accepted by the grader, and not turned down by a final review."""
    return Q(verdict=Verdict.ACCEPTED) & (
        _not_final() | Q(review_outcome__decision=OutcomeDecision.ACCEPTED)
    )


def reviewed_constraint() -> Q:
    """Has at least one review (whether of its latest grading is checked per row)."""
    return Q(Exists(Review.objects.filter(submission_id=OuterRef("pk"))))


def submission_chunks(
    versions: Sequence[VersionData],
    filters: Filters,
    *,
    constraint: Q | None = None,
    identities: bool = False,
    files: bool = True,
    reviews: bool = False,
    chunk_size: int = CHUNK,
) -> Iterator[tuple[VersionData, list[SubmissionData]]]:
    """The matching submissions of all ``versions`` in their order (task slug, version
    number), then by id: one query over a server-side cursor, cut into chunks of at
    most ``chunk_size`` that never span two versions. Each submission comes with its
    latest grading run, effective criterion points and score, and as asked its files
    and the reviews of its latest grading."""
    by_id = {v.id: v for v in versions}
    columns = ["task_version_id", "id", "model_name", "verdict", "submitted_at", "code_key"]
    columns += ["review_outcome__status", "review_outcome__decision", "review_outcome__score"]
    if identities:
        columns += ["submitter__username", "run_id", "labels"]
    rows = (
        submissions_matching(filters, list(by_id), constraint)
        .annotate(submitted_at=IsoUtc("created_at"))
        .order_by("task_version__task__slug", "task_version__number", "id")
        .values_list(*columns)
        .iterator(chunk_size=chunk_size)
    )
    version: VersionData | None = None
    chunk: list[SubmissionData] = []
    for row in rows:
        if version is None or row[0] != version.id or len(chunk) == chunk_size:
            if chunk and version is not None:
                yield version, _complete(chunk, version, files=files, reviews=reviews)
            version, chunk = by_id[row[0]], []
        final = row[6] == OutcomeStatus.FINAL
        chunk.append(
            SubmissionData(
                id=row[1],
                model=row[2],
                verdict=row[3],
                submitted_at=row[4],
                code_key=bytes(row[5]) if row[5] is not None else None,
                decision=row[7] if final else None,
                outcome_score=row[8] if final else None,
                score=row[8] if final and row[8] is not None else 0.0,
                identity=(row[9], row[10], row[11]) if identities else None,
            )
        )
    if chunk and version is not None:
        yield version, _complete(chunk, version, files=files, reviews=reviews)


def _complete(
    chunk: list[SubmissionData], version: VersionData, *, files: bool, reviews: bool
) -> list[SubmissionData]:
    by_id = {s.id: s for s in chunk}
    ids = IdArray(by_id)
    if files:
        for submission_id, rows in files_of(ids).items():
            by_id[submission_id].files = rows
    runs = GradingRun.objects.filter(ids_in("submission_id", ids)).order_by(
        "submission_id", "attempt"
    )
    for submission_id, run_id, speedup, metrics in runs.values_list(
        "submission_id", "id", "speedup", "metrics"
    ):
        by_id[submission_id].run_id = run_id  # the last attempt wins
        by_id[submission_id].speedup = speedup
        by_id[submission_id].metrics = metrics if isinstance(metrics, dict) else {}
    # Criterion points are read only where needed: a final review's score stands for
    # itself, but an explanation needs its own points, and critiques show which
    # automatic criteria the grader found met.
    _score(
        version,
        points={
            pk: s
            for pk, s in by_id.items()
            if s.outcome_score is None or any(is_explanation(p) for p, _ in s.files)
        },
        met=by_id if reviews else {},
    )
    if reviews:
        _attach_reviews(by_id, version)
    return chunk


def _score(
    version: VersionData,
    *,
    points: dict[int, SubmissionData],
    met: dict[int, SubmissionData],
) -> None:
    """Effective points per criterion, as the submission page shows them: the latest
    run's automatic points, overridden by reviewers' consensus points. The score is
    the final review outcome's (reviewers' mean total, or the adjudicator's), else
    the rubric total of the grader's points (achieved over positive points
    available, clipped to [0, 1]).

    ``points``: the submissions whose points are needed (every row: the grader's
    and the reviewers' consensus); ``met``: those whose latest run's rows are
    enough, for which automatic criteria it found met."""
    keys = {c.id: c.key for c in version.criteria}
    queries = []
    if points:
        queries.append(CriterionScore.objects.filter(ids_in("submission_id", points)))
    met_only = [pk for pk in met if pk not in points]
    if met_only:
        queries.append(
            CriterionScore.objects.filter(
                ids_in("submission_id", met_only), grading_run_id__isnull=False
            )
        )
    by_id = met | points
    consensus: list[tuple[SubmissionData, str, float]] = []
    for query in queries:
        rows = query.order_by("submission_id", "id").values_list(
            "submission_id", "criterion_id", "points", "grading_run_id", "met"
        )
        for submission_id, criterion_id, awarded, run_id, was_met in rows:
            submission = by_id[submission_id]
            key = keys.get(criterion_id)
            if key is None:
                continue
            if run_id is None:
                consensus.append((submission, key, awarded))
            elif run_id == submission.run_id:
                submission.awarded[key] = awarded
                submission.met[key] = was_met
    for submission, key, awarded in consensus:  # in id order: the latest stands
        submission.awarded[key] = awarded
    available = version.positive_points
    for submission in points.values():
        if submission.outcome_score is not None:
            submission.score = submission.outcome_score
            continue
        achieved = sum(submission.awarded.values())
        submission.score = min(1.0, max(0.0, achieved / available)) if available > 0 else 0.0


def _attach_reviews(by_id: dict[int, SubmissionData], version: VersionData) -> None:
    """Reviews of each submission's latest grading run, oldest first."""
    keys = {c.id: c.key for c in version.criteria}
    reviews: dict[int, ReviewData] = {}
    rows = (
        Review.objects.filter(ids_in("submission_id", by_id))
        .order_by("submission_id", "created_at", "id")
        .values_list("id", "submission_id", "grading_run_id", "decision", "score", "feedback")
    )
    for review_id, submission_id, run_id, decision, score, feedback in rows:
        submission = by_id[submission_id]
        if run_id == submission.run_id:
            reviews[review_id] = ReviewData(decision=decision, score=score, feedback=feedback)
            submission.reviews.append(reviews[review_id])
    if not reviews:
        return
    review_ids = IdArray(reviews)
    scores = ReviewScore.objects.filter(ids_in("review_id", review_ids)).order_by("review_id", "id")
    for review_id, criterion_id, points, comment, overturned in scores.values_list(
        "review_id", "criterion_id", "points", "comment", "overturned"
    ):
        if criterion_id in keys:
            reviews[review_id].criteria.append(
                {
                    "key": keys[criterion_id],
                    "points": points,
                    "comment": comment,
                    "overturned": overturned,
                }
            )
    comments = LineComment.objects.filter(ids_in("review_id", review_ids)).order_by(
        "review_id", "path", "line", "id"
    )
    for review_id, path, line, body in comments.values_list("review_id", "path", "line", "body"):
        reviews[review_id].line_comments.append({"path": path, "line": line, "body": body})


def pairwise_votes(version_id: int) -> list[tuple[int, int, str]]:
    """Every pairwise judgement of the version: (submission a, submission b, winner)."""
    judgements = PairwiseJudgement.objects.filter(task_version_id=version_id).order_by("id")
    return list(judgements.values_list("submission_a_id", "submission_b_id", "winner"))


def files_of(submission_ids: Iterable[int] | IdArray) -> dict[int, list[tuple[str, str]]]:
    ids = submission_ids if isinstance(submission_ids, IdArray) else IdArray(submission_ids)
    files: dict[int, list[tuple[str, str]]] = {pk: [] for pk in ids}
    rows = SubmissionFile.objects.filter(ids_in("submission_id", ids)).order_by(
        "submission_id", "path"
    )
    for submission_id, path, content in rows.values_list("submission_id", "path", "content"):
        files[submission_id].append((path, content))
    return files
