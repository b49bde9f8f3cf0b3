"""Reads of submissions: who may see which, list filters, and the public form of
a grading report (what a submitter may see of it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum

from accounts import scopes as scope_names
from benchwright import roles as role_names
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
    """Annotate ``speedup`` and automatic ``points`` of each one's latest grading run."""
    latest = GradingRun.objects.filter(submission=OuterRef("pk")).order_by("-attempt")
    points = (
        CriterionScore.objects.filter(grading_run_id=OuterRef("latest_run_id"))
        .values("grading_run_id")
        .annotate(total=Sum("points"))
        .values("total")[:1]
    )
    return (
        submissions.select_related("task_version__task")
        .annotate(latest_run_id=Subquery(latest.values("id")[:1]))
        .annotate(speedup=Subquery(latest.values("speedup")[:1]), points=Subquery(points))
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

TIMING_STATS = ("median_s", "spread", "count", "calls", "ci_low_s", "ci_high_s")
TIMING_FIELDS = (
    "timing_mode",
    "method",
    "shape",
    "speedup",
    "speedup_ci",
    "significant",
    "scored",
    "unscored_reason",
    "calls_per_batch",
)
TRIAL_FIELDS = ("shape", "trial", "ok", "max_abs_error", "max_rel_error", "shapes", "dtypes")
MAX_TRIALS = 200
MAX_INTEGRITY_ITEMS = 50
REASON_CHARS = 2000


def _tail(text: Any, limit: int) -> str:
    text = str(text or "")
    return text if len(text) <= limit else "…" + text[-limit:]


def _pick(data: Any, keys: Iterable[str]) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        return {}
    return {key: data[key] for key in keys if key in data}


def public_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """A grading report as a submitter may see it, by allow-list.

    Dropped: ``operator_notes`` (may quote hidden files), ``artifacts``, per-trial
    seeds and messages (a reference's own check may print expected values), raw
    timing samples. Logs (the submission's own output) keep only their tails.
    """
    timing = report.get("timing")
    public_timing = None
    if isinstance(timing, Mapping):
        public_timing = _pick(timing, TIMING_FIELDS)
        for side in ("reference", "submission"):
            public_timing[side] = _pick(timing.get(side), TIMING_STATS)
    integrity = report.get("integrity") if isinstance(report.get("integrity"), Mapping) else {}
    assert isinstance(integrity, Mapping)
    logs = report.get("logs") if isinstance(report.get("logs"), Mapping) else {}
    assert isinstance(logs, Mapping)
    trials = report.get("correctness") if isinstance(report.get("correctness"), list) else []
    assert isinstance(trials, list)
    hardware = report.get("hardware") if isinstance(report.get("hardware"), Mapping) else {}
    assert isinstance(hardware, Mapping)
    return {
        "verdict": report.get("verdict"),
        "reason": _tail(report.get("reason"), REASON_CHARS),
        "speedup": report.get("speedup"),
        "timing_mode": report.get("timing_mode"),
        "correctness": [_pick(t, TRIAL_FIELDS) for t in trials[:MAX_TRIALS]],
        "timing": public_timing,
        "integrity": {
            "checks": [str(c) for c in list(integrity.get("checks") or [])[:MAX_INTEGRITY_ITEMS]],
            "violations": [
                str(v) for v in list(integrity.get("violations") or [])[:MAX_INTEGRITY_ITEMS]
            ],
        },
        "hardware": {str(k): v for k, v in hardware.items() if isinstance(v, str | int | float)},
        "logs": {
            str(name): _tail(text, settings.API_LOG_TAIL_CHARS)
            for name, text in logs.items()
            if name in ("stdout", "stderr")
        },
        "harness_version": str(report.get("harness_version") or ""),
        "duration_s": report.get("duration_s"),
        "checked_calls": report.get("checked_calls"),
    }


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


def submission_review_outcome(submission: Submission) -> dict[str, Any] | None:
    """The final review outcome (decision, score, spread, feedback), or None while
    the submission has none. Reviewer identities are never part of it."""
    from reviews.selectors import submission_review_outcome as outcome

    return outcome(submission)


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
        "speedup": run.speedup if run is not None else None,
        "score": scores["score"] if scores else None,
        "review": submission_review_outcome(submission),
    }
