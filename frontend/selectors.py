"""Reads the browser UI needs beyond one line of ORM: validation tables, review
readiness, version contents for diffs, the catalog dashboard. Access checks stay in
``tasks.selectors``; callers pass querysets already limited to what the user may see."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, OuterRef, QuerySet, Subquery

from tasks import services as task_services
from tasks.models import (
    ReviewDecision,
    Task,
    TaskReview,
    TaskStatus,
    TaskVersion,
    ValidationResult,
    ValidationRun,
    ValidationStatus,
    Visibility,
    kind_choices,
)
from tasks.selectors import can_see_hidden_files, files_for_user

DRAFT = "draft"


# -- validation ------------------------------------------------------------------------------


@dataclass
class ValidationRow:
    """One graded file of a validation run, with the report's figures pulled out."""

    result: ValidationResult
    reason: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    speedup: float | None = None
    significant: bool = False
    speedup_scored: bool = False  # False under Triton's interpreter or for too short calls
    unscored_reason: str = ""
    error_not_finite: bool = False  # a failing trial's error was infinite or NaN
    timing_mode: str = ""
    reference_ms: float | None = None
    submission_ms: float | None = None
    duration_s: float | None = None
    logs: dict[str, str] = field(default_factory=dict)
    # The reference's own error when it failed (task_error): the task's editors may see
    # what it quotes of their hidden files.
    reference_error: str = ""
    # A debugging grading: passed/total per group, and every test's outcome by name
    # (the task's editors may see hidden tests).
    counts: dict[str, Any] = field(default_factory=dict)
    tests: list[dict[str, Any]] = field(default_factory=list)


def largest(values: list[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, int | float)]
    return max(numbers) if numbers else None


def validation_row(result: ValidationResult) -> ValidationRow:
    report: dict[str, Any] = result.report or {}
    trials = [t for t in report.get("correctness") or [] if isinstance(t, dict)]
    timing = report.get("timing") or {}
    return ValidationRow(
        result=result,
        reason=str(report.get("reason") or ""),
        max_abs_error=largest([t.get("max_abs_error") for t in trials]),
        max_rel_error=largest([t.get("max_rel_error") for t in trials]),
        speedup=report.get("speedup") if isinstance(report.get("speedup"), int | float) else None,
        significant=bool(timing.get("significant")),
        speedup_scored=timing.get("scored") is True,
        unscored_reason=str(timing.get("unscored_reason") or report.get("timing_mode") or ""),
        # A trial that failed with no error figure failed on a non-finite one (inf, NaN):
        # the largest finite figure of the other trials would say "tiny".
        error_not_finite=any(
            not t.get("ok") and t.get("max_abs_error") is None and t.get("shapes") for t in trials
        ),
        timing_mode=str(report.get("timing_mode") or ""),
        reference_ms=_median_ms(timing, "reference"),
        submission_ms=_median_ms(timing, "submission"),
        duration_s=report.get("duration_s"),
        logs={k: str(v) for k, v in (report.get("logs") or {}).items() if v},
        reference_error=(
            str(report.get("operator_notes") or "") if result.verdict == "task_error" else ""
        ),
        counts=report["counts"] if isinstance(report.get("counts"), dict) else {},
        tests=[t for t in report.get("tests") or [] if isinstance(t, dict)],
    )


def _median_ms(timing: dict[str, Any], side: str) -> float | None:
    median = (timing.get(side) or {}).get("median_s")
    return median * 1000 if isinstance(median, int | float) else None


def validation_chart(rows: list[ValidationRow]) -> dict[str, Any] | None:
    """Median call times of reference and candidate per timed file, for Chart.js, in
    ms or µs, whichever reads better."""
    timed = [r for r in rows if r.reference_ms is not None and r.submission_ms is not None]
    if not timed:
        return None
    top = max(max(r.reference_ms or 0, r.submission_ms or 0) for r in timed)
    unit, scale = ("ms", 1.0) if top >= 1 else ("\N{MICRO SIGN}s", 1000.0)
    return {
        "type": "bar",
        "labels": [r.result.path for r in timed],
        "series": [
            {
                "label": f"Reference ({unit})",
                "values": [(r.reference_ms or 0) * scale for r in timed],
            },
            {
                "label": f"Candidate ({unit})",
                "values": [(r.submission_ms or 0) * scale for r in timed],
            },
        ],
        "unit": f"{unit} per call (median)",
    }


def latest_validation(task: Task) -> ValidationRun | None:
    return task.validation_runs.order_by("-created_at", "-pk").first()


@dataclass(frozen=True)
class Readiness:
    """Whether the draft may go to review now, and if not, why (shown by the button)."""

    ready: bool
    reason: str


def review_readiness(task: Task) -> Readiness:
    if task.status != TaskStatus.DRAFT:
        return Readiness(False, f"The task is {task.get_status_display().lower()}.")
    problems = task_services.draft_problems(task)
    if problems:
        count = len(problems)
        return Readiness(False, f"The bundle check finds {count} problem{'s' * (count != 1)}.")
    digest = task_services.task_draft_hash(task)
    runs = task.validation_runs.order_by("-created_at", "-pk")
    current = runs.filter(content_hash=digest).first()
    if current is None:
        if runs.exists():
            return Readiness(False, "The draft changed since it was validated: validate it again.")
        return Readiness(False, "Validate the draft first: its solution and negatives are graded.")
    if current.status == ValidationStatus.RUNNING:
        return Readiness(False, "Validation is running.")
    if current.status == ValidationStatus.FAILED:
        return Readiness(False, "The last validation failed: see which file got the wrong verdict.")
    return Readiness(True, "Validation passed for the draft as it is.")


# -- reviews ---------------------------------------------------------------------------------


def latest_review(task: Task) -> TaskReview | None:
    return task.reviews.select_related("reviewer").order_by("-created_at", "-pk").first()


def feedback_for_author(task: Task) -> TaskReview | None:
    """The review that sent the draft back, while the author works on it."""
    review = latest_review(task)
    if review is None or review.decision != ReviewDecision.CHANGES_REQUESTED:
        return None
    return review if task.status == TaskStatus.DRAFT else None


def draft_files(task: Task) -> dict[str, str]:
    return {f.path: f.content for f in task.files.all()}


# -- versions ------------------------------------------------------------------------------


def diff_source_choices(task: Task, user: User | AnonymousUser) -> list[tuple[str, str]]:
    """What a diff may compare: the versions, and the draft for those who may see it."""
    choices = [(str(v.number), f"v{v.number}") for v in task.versions.order_by("-number")]
    if can_see_hidden_files(user, task):
        choices.insert(0, (DRAFT, "Working draft"))
    return choices


def source_files(
    task: Task, user: User | AnonymousUser, source: str
) -> tuple[str, dict[str, str]] | None:
    """(label, path -> text) of a version number or ``draft``, as ``user`` may see it;
    task.toml included for those who may see hidden files. None when not there."""
    hidden = can_see_hidden_files(user, task)
    if source == DRAFT:
        if not hidden:
            return None
        files = {f.path: f.content for f in files_for_user(user, task)}
        files["task.toml"] = task_services.draft_manifest_text(task)
        return "working draft", files
    version = _version(task, source)
    if version is None:
        return None
    files = {f.path: f.content for f in files_for_user(user, task, version)}
    if hidden:
        files["task.toml"] = task_services.version_manifest_text(version)
    return f"v{version.number}", files


def hidden_changes(task: Task, old: str, new: str) -> bool:
    """Whether two versions differ in what the viewer cannot see (hidden files, the
    grading settings in task.toml): said as a fact, never shown."""
    first, second = _version(task, old), _version(task, new)
    if first is None or second is None or first.content_hash == second.content_hash:
        return False

    def hidden(version: TaskVersion) -> tuple[dict[str, str], str]:
        files = version.files.filter(visibility=Visibility.HIDDEN)
        return {f.path: f.content for f in files}, task_services.version_manifest_text(version)

    return hidden(first) != hidden(second)


def _version(task: Task, number: str) -> TaskVersion | None:
    if not number.isdigit():
        return None
    return task.versions.filter(number=int(number)).first()


# -- the catalog dashboard -------------------------------------------------------------------


def failing_validation(tasks: QuerySet[Task]) -> QuerySet[Task]:
    """Tasks whose latest validation run failed, most recent failure first."""
    latest = ValidationRun.objects.filter(task=OuterRef("pk")).order_by("-created_at", "-pk")
    return (
        tasks.annotate(
            latest_validation=Subquery(latest.values("status")[:1]),
            latest_validation_at=Subquery(latest.values("created_at")[:1]),
        )
        .filter(latest_validation=ValidationStatus.FAILED)
        .order_by("-latest_validation_at")
    )


def dashboard(tasks: QuerySet[Task]) -> dict[str, Any]:
    """Catalog health over ``tasks`` (already what the user may see)."""
    counts = Counter(
        {
            (row["kind"], row["status"]): row["n"]
            for row in tasks.order_by().values("kind", "status").annotate(n=Count("pk"))
        }
    )
    statuses = list(TaskStatus)
    # Every registered kind, and any kind a stored task has that no grader is
    # registered for any more (shown by name, not dropped).
    kinds = kind_choices()
    kinds += [(k, k) for k in sorted({k for k, _ in counts} - {k for k, _ in kinds})]
    failing = failing_validation(tasks)
    return {
        "total": sum(counts.values()),
        "by_status": {
            s.value: sum(n for (_, st), n in counts.items() if st == s) for s in statuses
        },
        "chart": {
            "type": "bar",
            "stacked": True,
            "labels": [label for _, label in kinds],
            "series": [
                {
                    "label": s.label,
                    "key": s.value,
                    "values": [counts[(k, s.value)] for k, _ in kinds],
                }
                for s in statuses
            ],
            "unit": "tasks",
        },
        "failing": failing[:20],
        "failing_count": failing.count(),
        "waiting": tasks.filter(status=TaskStatus.IN_REVIEW).order_by("updated_at")[:20],
    }
