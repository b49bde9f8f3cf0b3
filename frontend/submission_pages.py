"""Submissions in the browser: who may see which, and what a page shows of one.

A submission is visible to its submitter, to the authors of its task, to admins,
to a reviewer who holds or held a review slot on it, and to exporters (what they
export is submissions: they open the ones an export left out to see why).
Reviewers and exporters see it blind, as in the review queue: no model, run,
labels or submitter. Everyone sees the
public report (``submissions.selectors.public_report``), never the grader's notes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from benchwright import roles
from graders import registry
from reviews.serving import serving_view
from submissions import selectors as submission_selectors
from submissions.models import GradingRun, Submission, SubmissionStatus
from tasks.timelines import answer_timelines

from .selectors import largest

# Statuses after which nothing about the submission changes without a person acting.
SETTLED = frozenset(
    {SubmissionStatus.GRADED, SubmissionStatus.FAILED, SubmissionStatus.REVIEWED,
     SubmissionStatus.CANCELLED}
)  # fmt: skip
GRADING = frozenset({SubmissionStatus.QUEUED, SubmissionStatus.RUNNING})


visible_submissions = submission_selectors.visible_submissions


def with_timing(submissions: QuerySet[Submission]) -> QuerySet[Submission]:
    """The latest grading's figures of each submission (see
    ``submissions.selectors.with_latest_grading``); ``speedup_view(s)`` says whether
    its speedup is a score."""
    return submission_selectors.with_latest_grading(submissions)


def speedup_view(submission: Submission) -> dict[str, Any]:
    """Whether the list's speedup is a score, as the API says it (accepted, on the
    task's hardware, a timing the grader scored), and the timing mode."""
    return submission_selectors.speedup_view(
        getattr(submission, "speedup", None), getattr(submission, "latest_timing", None)
    )


def is_blind(user: User | AnonymousUser, submission: Submission) -> bool:
    """Whether the user sees the submission as a reviewer does: without who sent it."""
    if roles.is_admin(user) or submission.submitter_id == user.pk:
        return False
    return submission.task_version.task.owner_id != user.pk


@dataclass
class ShapeRow:
    """The correctness trials of one shape set, summed up."""

    shape: str
    trials: int
    passed: int
    max_abs_error: float | None
    max_rel_error: float | None
    input_shapes: list[list[int]]
    dtypes: list[str]

    @property
    def ok(self) -> bool:
        return self.passed == self.trials


def shape_rows(report: dict[str, Any] | None) -> list[ShapeRow]:
    groups: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for trial in (report or {}).get("correctness") or []:
        groups.setdefault(str(trial.get("shape", "")), []).append(trial)
    return [
        ShapeRow(
            shape=shape,
            trials=len(trials),
            passed=sum(1 for t in trials if t.get("ok")),
            max_abs_error=largest([t.get("max_abs_error") for t in trials]),
            max_rel_error=largest([t.get("max_rel_error") for t in trials]),
            input_shapes=list(trials[0].get("shapes") or []),
            dtypes=list(trials[0].get("dtypes") or []),
        )
        for shape, trials in groups.items()
    ]


@dataclass(frozen=True)
class Figure:
    """One of the kind's named metrics of a grading, as the page shows it."""

    name: str
    value: float | None
    unit: str
    better: str  # "higher" or "lower"
    description: str


def figures(kind: str, run: GradingRun | None) -> list[Figure]:
    """The grading's metrics by name, as the task's kind declares them (none for a kind
    with no registered grader)."""
    if run is None or not registry.is_kind(kind):
        return []
    values = run.metrics if isinstance(run.metrics, dict) else {}
    return [
        Figure(m.name, values.get(m.name), m.unit, m.direction, m.description)
        for m in registry.get(kind).metrics
    ]


def page_context(user: User | AnonymousUser, submission: Submission) -> dict[str, Any]:
    """What the submission page shows."""
    run = submission_selectors.latest_grading_run(submission)
    report = (
        submission_selectors.public_report(run.report, submission.task_version.kind)
        if run is not None
        else None
    )
    timing = (report or {}).get("timing") or None
    return {
        "submission": submission,
        "task": submission.task_version.task,
        "blind": is_blind(user, submission),
        "files": list(submission.files.order_by("path").values_list("path", "content")),
        "run": run,
        "report": report,
        "timing": timing,
        "speed": submission_selectors.speedup_view(
            run.speedup if run is not None else None,
            {**(timing or {}), "verdict": run.verdict, "on_target": run.target_hardware}
            if run is not None
            else None,
        ),
        "shapes": shape_rows(report),
        # Correctness per shape set and timing are the kernel grader's sections.
        "kernel_report": submission.task_version.kind == "kernel",
        "timelines": answer_timelines(submission.task_version, (report or {}).get("fields")),
        "figures": figures(submission.task_version.kind, run),
        "serving": serving_view(report),
        "scores": submission_selectors.rubric_scores(submission, run),
        "outcome": submission_selectors.submission_review_outcome(submission),
        "grading": submission.status in GRADING,
        "settled": submission.status in SETTLED,
    }
