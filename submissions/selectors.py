"""Reads of submissions: who may see which, list filters, and the public form of
a grading report (what a submitter may see of it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import JSONObject

from accounts import scopes as scope_names
from benchwright import roles as role_names
from graders import registry
from graders.verdicts import Verdict
from rubrics.models import Criterion, CriterionScore
from rubrics.services import rubric_total

from .models import GradingRun, Submission, SubmissionStatus

FINISHED = frozenset(
    {
        SubmissionStatus.GRADED,
        SubmissionStatus.FAILED,
        SubmissionStatus.AWAITING_REVIEW,
        SubmissionStatus.REVIEWED,
        SubmissionStatus.CANCELLED,
    }
)


# The reviews app's ReviewOutcome.status of a final outcome (its OutcomeStatus.FINAL;
# a test holds them equal). Lists annotate a submission's decision through the
# reverse relation ``review_outcome`` without importing that app.
FINAL_OUTCOME = "final"


def submissions_for_user(
    user: AbstractBaseUser | AnonymousUser, *, scopes: frozenset[str], roles: frozenset[str]
) -> QuerySet[Submission]:
    """Submissions a request may see: its user's own; with ``author``, those to the
    user's tasks; as an admin, all. Nothing without ``read``. Never another
    client's otherwise. Reviewers get their items through the review queue, which
    is blind: listing submissions with model and run would undo that."""
    submissions = Submission.objects.all()
    if not user.is_authenticated or scope_names.READ not in scopes:
        return submissions.none()
    if role_names.ADMIN in roles:
        return submissions
    visible = Q(submitter_id=user.pk)
    if scope_names.AUTHOR in scopes:
        visible |= Q(task_version__task__owner_id=user.pk)
    return submissions.filter(visible)


def submissions_filtered(
    submissions: QuerySet[Submission],
    *,
    task: str | None = None,
    model: str | None = None,
    run_id: str | None = None,
    statuses: Iterable[str] = (),
    verdicts: Iterable[str] = (),
    created_after: datetime | None = None,
    created_before: datetime | None = None,
) -> QuerySet[Submission]:
    if task:
        submissions = submissions.filter(task_version__task__slug=task)
    if model:
        submissions = submissions.filter(model_name=model)
    if run_id:
        submissions = submissions.filter(run_id=run_id)
    if statuses := list(statuses):
        submissions = submissions.filter(status__in=statuses)
    if verdicts := list(verdicts):
        submissions = submissions.filter(verdict__in=verdicts)
    if created_after:
        submissions = submissions.filter(created_at__gte=created_after)
    if created_before:
        submissions = submissions.filter(created_at__lt=created_before)
    return submissions


def with_latest_grading(submissions: QuerySet[Submission]) -> QuerySet[Submission]:
    """Annotate what a list shows of each one's latest grading run and its review.

    ``speedup`` is the measured figure and ``latest_timing`` what decides whether it
    is a score (see ``speedup_view``). ``automatic_points`` are the latest run's
    automatic criteria as the grader scored them; ``points`` are the rubric's points
    so far: those, with a reviewer's overturn in place of the grader's, plus the
    reviewers' consensus on human criteria (equal until a review is final).
    ``review_decision`` and ``review_score`` come from the final review outcome
    ("" and None before it)."""
    latest = GradingRun.objects.filter(submission=OuterRef("pk")).order_by("-attempt")
    automatic = (
        CriterionScore.objects.filter(grading_run_id=OuterRef("latest_run_id"))
        .values("grading_run_id")
        .annotate(total=Sum("points"))
        .values("total")[:1]
    )
    final = Q(review_outcome__status=FINAL_OUTCOME)
    return (
        submissions.select_related("task_version__task")
        .annotate(latest_run_id=Subquery(latest.values("id")[:1]))
        .annotate(
            speedup=Subquery(latest.values("speedup")[:1]),
            latest_timing=Subquery(latest.values(timing=_TIMING_SUMMARY)[:1]),
            automatic_points=Subquery(automatic),
            points=Subquery(_current_points()),
            points_available=Subquery(_points_available()),
            review_decision=Case(
                When(final, then=F("review_outcome__decision")), default=Value("")
            ),
            review_score=Case(When(final, then=F("review_outcome__score")), default=None),
        )
    )


# What decides whether a run's speedup is a score, as one JSON value per run.
_TIMING_SUMMARY = JSONObject(
    verdict=F("verdict"),
    timing_mode=F("timing_mode"),
    on_target=F("target_hardware"),
    scored=F("report__timing__scored"),
    significant=F("report__timing__significant"),
    unscored_reason=F("report__timing__unscored_reason"),
)


def _current_points() -> QuerySet[Any, Any]:
    """The sum rubric_scores shows as ``awarded``, per submission: human-source rows
    (grading_run null: consensus on human criteria and overturns of automatic ones)
    and the latest run's automatic rows that no human row replaces."""
    replaced = CriterionScore.objects.filter(
        submission_id=OuterRef("submission_id"),
        criterion_id=OuterRef("criterion_id"),
        grading_run__isnull=True,
    )
    current = Q(grading_run__isnull=True) | (
        Q(grading_run_id=OuterRef("latest_run_id")) & ~Exists(replaced)
    )
    return (
        CriterionScore.objects.filter(submission_id=OuterRef("pk"))
        .filter(current)
        .values("submission_id")
        .annotate(total=Sum("points"))
        .values("total")[:1]
    )


def _points_available() -> QuerySet[Any, Any]:
    return (
        Criterion.objects.filter(rubric__version_id=OuterRef("task_version_id"), points__gt=0)
        .values("rubric_id")
        .annotate(total=Sum("points"))
        .values("total")[:1]
    )


def speedup_view(speedup: float | None, timing: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a client may read of a run's speedup, so that a figure that is no
    performance measurement never passes for a score.

    ``timing`` holds the run's ``verdict``, ``timing_mode``, ``on_target`` (graded
    on the task's hardware) and the report's timing ``scored``, ``significant`` and
    ``unscored_reason``. The speedup is a score only where the rubric's speedup
    criteria would use it: an accepted submission, timed on the task's target
    hardware, with a timing the grader marked scored (never Triton's interpreter on
    a CPU host, nor calls too short to time). ``speedup`` stays the raw figure."""
    timing = timing or {}
    mode = timing.get("timing_mode") or None
    reason = ""
    if speedup is None:
        scored = False
    elif not _true(timing.get("scored")):
        scored = False
        reason = str(timing.get("unscored_reason") or f"{mode or 'this'} timing is not scored")
    elif not _true(timing.get("on_target")):
        scored = False
        reason = "not graded on the task's target hardware"
    elif timing.get("verdict") != Verdict.ACCEPTED:
        scored = False
        reason = f"verdict {timing.get('verdict')}: a speedup counts only when accepted"
    else:
        scored = True
    significant = timing.get("significant")
    return {
        "timing_mode": mode,
        "speedup": speedup,
        "speedup_scored": scored,
        "score_speedup": speedup if scored else None,
        "speedup_significant": _true(significant) if scored else None,
        "speedup_unscored_reason": reason,
    }


def _true(value: Any) -> bool:
    """A JSON true as PostgreSQL (true) or SQLite ("true" from a report key, 1 from a
    boolean column) hands it back inside a JSON object."""
    return value is True or value == 1 or value == "true"


def run_speedup_view(run: GradingRun | None) -> dict[str, Any]:
    """``speedup_view`` of one grading run (None: not graded yet)."""
    if run is None:
        return speedup_view(None, None)
    report = run.report if isinstance(run.report, Mapping) else {}
    timing = report.get("timing") if isinstance(report.get("timing"), Mapping) else {}
    assert isinstance(timing, Mapping)
    return speedup_view(
        run.speedup,
        {
            "verdict": run.verdict,
            "timing_mode": run.timing_mode,
            "on_target": run.target_hardware,
            "scored": timing.get("scored"),
            "significant": timing.get("significant"),
            "unscored_reason": timing.get("unscored_reason"),
        },
    )


def submissions_summary(submissions: QuerySet[Submission]) -> dict[str, Any]:
    """Counts by status and by verdict, and whether every one has finished."""
    by_status: dict[str, int] = {}
    by_verdict: dict[str, int] = {}
    rows = submissions.order_by().values("status", "verdict").annotate(n=Count("id"))
    for row in rows:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["n"]
        if row["verdict"]:
            by_verdict[row["verdict"]] = by_verdict.get(row["verdict"], 0) + row["n"]
    total = sum(by_status.values())
    finished = sum(n for status, n in by_status.items() if status in FINISHED)
    return {
        "total": total,
        "finished": finished,
        "unfinished": total - finished,
        "by_status": by_status,
        "by_verdict": by_verdict,
    }


def latest_grading_run(submission: Submission) -> GradingRun | None:
    return submission.grading_runs.order_by("-attempt").first()


# The public grading report ---------------------------------------------------


def public_report(report: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A grading report as a submitter may see it: the allow-list of the task's kind
    (``TaskKind.public_report``: never operator notes, hidden tests or answer keys)."""
    return registry.get(kind).public_report(report, log_tail_chars=settings.API_LOG_TAIL_CHARS)


def rubric_scores(submission: Submission, run: GradingRun | None) -> dict[str, Any] | None:
    """Each criterion of the pinned rubric with the points awarded so far: automatic
    ones from the latest grading run, human ones from reviews."""
    rubric = getattr(submission.task_version, "rubric", None)
    if rubric is None:
        return None
    criteria: list[Criterion] = list(rubric.criteria.order_by("position"))
    current = Q(grading_run__isnull=True)  # human scores
    if run is not None:
        current |= Q(grading_run=run)
    scores = CriterionScore.objects.filter(submission=submission).filter(current)
    by_key = {s.criterion.key: s for s in scores.select_related("criterion").order_by("id")}
    awarded = {key: s.points for key, s in by_key.items()}
    return {
        "criteria": [
            {
                "key": c.key,
                "title": c.title,
                "kind": c.kind,
                "points": c.points,
                "awarded": by_key[c.key].points if c.key in by_key else None,
                "met": by_key[c.key].met if c.key in by_key else None,
                "detail": by_key[c.key].detail if c.key in by_key else "",
            }
            for c in criteria
        ],
        "awarded": sum(awarded.values()),
        "available": sum(c.points for c in criteria if c.points > 0),
        "score": rubric_total(criteria, awarded),
    }


def _no_outcome(submission: Submission) -> dict[str, Any] | None:
    return None


# How a submission's final review outcome reads. The reviews app, downstream of this
# one, supplies it when it starts (reviews.apps), so that submissions never imports
# it; without it no submission has an outcome.
_outcome_reader: Callable[[Submission], dict[str, Any] | None] = _no_outcome


def read_review_outcomes_with(reader: Callable[[Submission], dict[str, Any] | None]) -> None:
    global _outcome_reader
    _outcome_reader = reader


def submission_review_outcome(submission: Submission) -> dict[str, Any] | None:
    """The final review outcome (decision, score, spread, feedback), or None while
    the submission has none. Reviewer identities are never part of it."""
    return _outcome_reader(submission)


def submission_event_data(submission: Submission) -> dict[str, Any]:
    """The submission as webhook events carry it (no files, no report)."""
    run = latest_grading_run(submission)
    scores = rubric_scores(submission, run)
    return {
        "id": submission.pk,
        "task": submission.task_version.task.slug,
        "task_version": submission.task_version.number,
        "model": submission.model_name,
        "run_id": submission.run_id,
        "labels": submission.labels,
        "status": submission.status,
        "verdict": submission.verdict,
        **_event_speedup(run),
        "score": scores["score"] if scores else None,
        "review": submission_review_outcome(submission),
    }


def _event_speedup(run: GradingRun | None) -> dict[str, Any]:
    view = run_speedup_view(run)
    return {key: view[key] for key in ("timing_mode", "speedup", "speedup_scored", "score_speedup")}


def visible_submissions(user: User | AnonymousUser) -> QuerySet[Submission]:
    """The submissions whose page a user may open: their own, those to their tasks
    (authors), those they were assigned to review (reviewers); all for exporters and
    admins."""
    submissions = Submission.objects.select_related("task_version__task", "submitter")
    if not user.is_authenticated:
        return submissions.none()
    if role_names.is_admin(user) or role_names.has_role(user, role_names.EXPORTER):
        return submissions.all()
    visible = Q(submitter_id=user.pk)
    if role_names.has_role(user, role_names.AUTHOR):
        visible |= Q(task_version__task__owner_id=user.pk)
    if role_names.has_role(user, role_names.REVIEWER):
        visible |= Q(review_assignments__reviewer_id=user.pk)
    ids = Submission.objects.filter(visible).values("pk")
    return submissions.filter(pk__in=ids)
