"""Reads of the reviews app: the queue, what a reviewer may see of an item, pairs.

Blindness: what a reviewer is shown of a submission comes from ``review_item``
and ``pair_item`` only, and those never read the submission's model name, run
id, labels, submitter or API token. Items are named by their slot's id (or a
pair offer's random id), never by the submission's id, which other endpoints
could resolve to a model name.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from datetime import timedelta
from itertools import combinations, zip_longest
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from benchwright import roles
from graders.verdicts import Verdict
from rubrics.models import Criterion, CriterionKind, CriterionScore
from rubrics.services import rubric_total
from submissions.models import GradingRun, Submission, SubmissionStatus
from tasks.models import FileRole, Task, TaskFile, Visibility
from tasks.selectors import can_see_hidden_files

from . import access
from .models import (
    AssignmentStatus,
    AuditEvent,
    OutcomeStatus,
    PairOffer,
    Review,
    ReviewAssignment,
    ReviewOutcome,
    ReviewPolicy,
)

AnyUser = AbstractBaseUser | AnonymousUser
LOG_CHARS = 8000
MAX_TRIALS = 200
FIX_DIFF_CHARS = 200_000
PROFILE_ROWS = 15
PAIR_POOL = 30  # most recent accepted submissions per task version considered for pairs
PAIR_VERSIONS = 20
SKIP_MEMORY = timedelta(hours=1)  # a skipped item comes back last for this long


def policy_for(task: Task) -> ReviewPolicy:
    """The task's policy, or the defaults (unsaved) when it has none."""
    policy = ReviewPolicy.objects.filter(task=task).first()
    return policy if policy is not None else ReviewPolicy(task=task)


def text_lines(text: str) -> list[str]:
    """Lines as numbered everywhere in reviews (and as Pygments counts them)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# The queue ------------------------------------------------------------------------------------


def active_claim(reviewer: AnyUser) -> ReviewAssignment | None:
    return (
        ReviewAssignment.objects.filter(
            reviewer_id=reviewer.pk,
            status=AssignmentStatus.CLAIMED,
            expires_at__gte=timezone.now(),
            submission__status=SubmissionStatus.AWAITING_REVIEW,
        )
        .order_by("claimed_at")
        .first()
    )


def claimable_assignments(reviewer: AnyUser) -> QuerySet[ReviewAssignment]:
    """Open slots this reviewer may take, least-loaded first: the submission with
    the fewest slots claimed or reviewed, then the slot that has waited longest;
    items the reviewer skipped lately come last. Never a submission to a task the
    reviewer wrote, one they submitted, or one they already hold or reviewed."""
    load = (
        ReviewAssignment.objects.filter(
            submission_id=OuterRef("submission_id"),
            status__in=[AssignmentStatus.CLAIMED, AssignmentStatus.SUBMITTED],
        )
        .order_by()
        .values("submission_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    skipped = AuditEvent.objects.filter(
        actor_id=reviewer.pk,
        verb="claim.released",
        submission_id=OuterRef("submission_id"),
        created_at__gte=timezone.now() - SKIP_MEMORY,
    )
    return (
        ReviewAssignment.objects.filter(
            status=AssignmentStatus.OPEN,
            submission__status=SubmissionStatus.AWAITING_REVIEW,
        )
        .exclude(submission__task_version__task__owner_id=reviewer.pk)
        .exclude(submission__submitter_id=reviewer.pk)
        .exclude(submission_id__in=_held_by(reviewer))
        .exclude(submission_id__in=_reviewed_by(reviewer))
        .annotate(load=Coalesce(Subquery(load), 0), skipped=Exists(skipped))
        .order_by("skipped", "load", "created_at", "submission_id", "slot")
    )


def _held_by(reviewer: AnyUser) -> QuerySet[Any]:
    return ReviewAssignment.objects.filter(reviewer_id=reviewer.pk).values("submission_id")


def _reviewed_by(reviewer: AnyUser) -> QuerySet[Any]:
    return Review.objects.filter(reviewer_id=reviewer.pk).values("submission_id")


def has_taken(reviewer: AnyUser, submission_id: int) -> bool:
    return (
        ReviewAssignment.objects.filter(reviewer_id=reviewer.pk, submission_id=submission_id)
        .exclude(status=AssignmentStatus.OPEN)
        .exists()
        or Review.objects.filter(reviewer_id=reviewer.pk, submission_id=submission_id).exists()
    )


def queue_size(reviewer: AnyUser) -> int:
    return claimable_assignments(reviewer).values("submission_id").distinct().count()


def assignment_for(reviewer: AnyUser, assignment_id: int) -> ReviewAssignment | None:
    """A slot the reviewer holds or filled; None otherwise (a 404 for views)."""
    return (
        ReviewAssignment.objects.select_related("submission__task_version__task")
        .filter(pk=assignment_id, reviewer_id=reviewer.pk)
        .exclude(status=AssignmentStatus.CANCELLED)
        .first()
    )


# Submissions, runs and rubrics ----------------------------------------------------------------


def latest_run(submission: Submission) -> GradingRun | None:
    return submission.grading_runs.order_by("-attempt").first()


def criteria_of(submission: Submission) -> list[Criterion]:
    rubric = getattr(submission.task_version, "rubric", None)
    if rubric is None:
        return []
    return list(rubric.criteria.order_by("position"))


def automatic_scores(run: GradingRun) -> dict[str, CriterionScore]:
    scores = run.criterion_scores.select_related("criterion")
    return {score.criterion.key: score for score in scores}


def submission_lines(submission: Submission) -> dict[str, list[str]]:
    return {f.path: text_lines(f.content) for f in submission.files.all()}


def current_reviews(submission: Submission) -> QuerySet[Review]:
    """Reviews of the submission's latest grading: what its outcome combines."""
    run = latest_run(submission)
    return Review.objects.filter(submission=submission, grading_run=run).order_by("pk")


def may_adjudicate(user: AnyUser, submission: Submission) -> bool:
    """A senior reviewer (or admin) with no stake in it: not one of its reviewers,
    not its task's author, not its submitter."""
    if not access.is_senior(user):
        return False
    if Review.objects.filter(submission=submission, reviewer_id=user.pk).exists():
        return False
    task = Task.objects.only("owner_id").get(pk=submission.task_version.task_id)
    return user.pk not in (task.owner_id, submission.submitter_id)


def review_snapshot(review: Review) -> dict[str, Any]:
    """A review as the audit trail records it."""
    return {
        "decision": review.decision,
        "feedback": review.feedback,
        "score": review.score,
        "scores": {
            s.criterion.key: {
                "points": s.points,
                "comment": s.comment,
                "overturned": s.overturned,
                "overturn_reason": s.overturn_reason,
            }
            for s in review.scores.select_related("criterion")
        },
        "comments": [
            {"path": c.path, "line": c.line, "body": c.body} for c in review.line_comments.all()
        ],
    }


# What a reviewer sees -------------------------------------------------------------------------


def reviewer_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """A grading report as a reviewer sees it. Reviewers may see hidden task files,
    so the grader's notes stay; identities were never in a report."""
    timing = report.get("timing") if isinstance(report.get("timing"), Mapping) else None
    integrity = report.get("integrity") if isinstance(report.get("integrity"), Mapping) else {}
    logs = report.get("logs") if isinstance(report.get("logs"), Mapping) else {}
    trials = report.get("correctness") if isinstance(report.get("correctness"), list) else []
    tests = report.get("tests") if isinstance(report.get("tests"), list) else []
    hardware = report.get("hardware") if isinstance(report.get("hardware"), Mapping) else {}
    assert isinstance(integrity, Mapping) and isinstance(logs, Mapping)
    assert isinstance(hardware, Mapping) and isinstance(trials, list) and isinstance(tests, list)
    return {
        "verdict": str(report.get("verdict") or ""),
        "reason": _tail(report.get("reason"), LOG_CHARS),
        "speedup": _number(report.get("speedup")),
        "timing_mode": str(report.get("timing_mode") or ""),
        "correctness": [_trial(t) for t in trials[:MAX_TRIALS] if isinstance(t, Mapping)],
        "timing": dict(timing) if timing is not None else None,
        "integrity": {
            "checks": [str(c) for c in list(integrity.get("checks") or [])[:100]],
            "violations": [str(v) for v in list(integrity.get("violations") or [])[:100]],
        },
        "hardware": {str(k): v for k, v in hardware.items() if isinstance(v, str | int | float)},
        "logs": {
            str(name): _tail(text, LOG_CHARS)
            for name, text in logs.items()
            if name in ("stdout", "stderr") and text
        },
        "grader_notes": _tail(report.get("operator_notes"), LOG_CHARS),
        "harness_version": str(report.get("harness_version") or ""),
        "duration_s": _number(report.get("duration_s")),
        "checked_calls": report.get("checked_calls"),
        # A debugging fix: its tests by name (reviewers may see hidden ones) and the
        # diff the grader applied.
        "tests": [_test(t) for t in tests[:MAX_TRIALS] if isinstance(t, Mapping)],
        "lines_changed": report.get("lines_changed"),
        "fix_diff": str(report.get("diff") or "")[:FIX_DIFF_CHARS],
        # A profiling answer: each field beside the key's value (reviewers may see the
        # key), the scores, and the free-text fields the rubric's human criteria judge.
        "answer": _answer(report) if isinstance(report.get("fields"), list) else None,
        # A kernel grading's trace summary (advisory): top operators, submission beside
        # reference (reviewers may see what the reference does).
        "profile": _profile(report.get("profile")),
        # A serving grading: both sides' runs and climbs (reviewers may see the
        # reference's config, a hidden task file).
        "serving": dict(serving) if isinstance(serving := report.get("serving"), Mapping) else None,
    }


def _profile(profile: Any) -> dict[str, Any] | None:
    if not isinstance(profile, Mapping):
        return None
    sides: dict[str, dict[str, Any]] = {}
    for name in ("submission", "reference"):
        side = profile.get(name)
        side = side if isinstance(side, Mapping) else {}
        operators = side.get("operators")
        sides[name] = {
            "operators": [
                {
                    "name": _tail(op.get("name"), 200),
                    "count": _number(op.get("count")),
                    "self_cpu_s": _micro(op.get("self_cpu_us")),
                    "self_cuda_s": _micro(op.get("self_cuda_us")),
                }
                for op in (operators if isinstance(operators, list) else [])[:PROFILE_ROWS]
                if isinstance(op, Mapping)
            ],
            "cpu_s": _micro(side.get("cpu_us_per_call")),
            "outside_s": _micro(side.get("outside_us_per_call")),
            "ops": _number(side.get("ops_per_call")),
            "launches": _number(side.get("launches_per_call")),
            "note": _tail(side.get("note"), 500),
        }
    rows = list(zip_longest(sides["submission"]["operators"], sides["reference"]["operators"]))
    return {
        "calls": _number(profile.get("calls")),
        "cuda": profile.get("device") == "cuda",
        "rows": rows,
        **sides,
    }


def _micro(value: Any) -> float | None:
    number = _number(value)
    return None if number is None else number / 1e6


def _answer(report: Mapping[str, Any]) -> dict[str, Any]:
    score = report.get("score")
    score = score if isinstance(score, Mapping) else {}
    texts = report.get("texts")
    texts = texts if isinstance(texts, Mapping) else {}
    fields = [f for f in report.get("fields") or [] if isinstance(f, Mapping)]
    return {
        "error": str(report.get("answer_error") or ""),
        "strict": _number(score.get("strict")),
        "partial": _number(score.get("partial")),
        "fields": [
            {
                "name": str(f.get("name") or ""),
                "type": str(f.get("type") or ""),
                "hit": bool(f.get("hit")),
                "score": _number(f.get("score")),
                "points": _number(f.get("points")),
                "message": _tail(f.get("message"), 500),
                "answer": _tail(json.dumps(f.get("answer")), 500),
                "expected": _tail(json.dumps(f.get("expected")), 500),
            }
            for f in fields[:MAX_TRIALS]
        ],
        "texts": {str(k): _tail(v, LOG_CHARS) for k, v in texts.items()},
    }


def _test(test: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(test.get("id") or ""),
        "group": str(test.get("group") or "").replace("_", " ").upper(),
        "visible": bool(test.get("visible")),
        "outcome": str(test.get("outcome") or ""),
        "seconds": _number(test.get("seconds")),
        "message": _tail(test.get("message"), 500),
    }


def _trial(trial: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "shape": str(trial.get("shape") or ""),
        "trial": trial.get("trial"),
        "ok": bool(trial.get("ok")),
        "max_abs_error": _number(trial.get("max_abs_error")),
        "max_rel_error": _number(trial.get("max_rel_error")),
        "shapes": trial.get("shapes") or [],
        "dtypes": trial.get("dtypes") or [],
        "message": _tail(trial.get("message"), 500),
    }


def _tail(text: Any, limit: int) -> str:
    text = str(text or "")
    return text if len(text) <= limit else "…" + text[-limit:]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def task_files(user: AnyUser, submission: Submission) -> dict[str, list[TaskFile]]:
    """The version's prompt files, and the starter and reference to diff against
    (the reference only for those who may see hidden files)."""
    version = submission.task_version
    files = list(version.files.all())
    hidden_ok = can_see_hidden_files(user, version.task)  # type: ignore[arg-type]
    return {
        "prompt": [f for f in files if f.visibility == Visibility.PROMPT],
        "starter": [f for f in files if f.role == FileRole.STARTER],
        "reference": [f for f in files if f.role == FileRole.REFERENCE and hidden_ok],
    }


def rubric_rows(submission: Submission, run: GradingRun | None) -> list[dict[str, Any]]:
    """Each criterion with what the grader already scored (automatic ones)."""
    automatic = automatic_scores(run) if run is not None else {}
    rows = []
    for criterion in criteria_of(submission):
        score = automatic.get(criterion.key)
        rows.append(
            {
                "criterion": criterion,
                "key": criterion.key,
                "automatic": criterion.kind == CriterionKind.AUTOMATIC,
                "awarded": score.points if score is not None else None,
                "met": score.met if score is not None else None,
                "detail": score.detail if score is not None else "",
                "levels": criterion.levels,
            }
        )
    return rows


def review_item(user: AnyUser, submission: Submission) -> dict[str, Any]:
    """Everything the review screen and the API show about one submission, blind."""
    run = latest_run(submission)
    version = submission.task_version
    return {
        "task": {
            "slug": version.task.slug,
            "title": version.title,
            "version": version.number,
            "hardware": version.hardware,
            "statement": version.statement,
        },
        "files": {f.path: f.content for f in submission.files.all()},
        "task_files": task_files(user, submission),
        "report": reviewer_report(run.report) if run is not None else None,
        "rubric": rubric_rows(submission, run),
        "run": run,
    }


def other_reviews(review: Review) -> QuerySet[Review]:
    """The other reviews of the same grading, shown to a reviewer only after they
    have submitted their own."""
    return (
        Review.objects.filter(submission_id=review.submission_id, grading_run=review.grading_run)
        .exclude(pk=review.pk)
        .prefetch_related("scores__criterion", "line_comments")
        .order_by("pk")
    )


def reviews_for_user(user: AnyUser) -> QuerySet[Review]:
    """A reviewer's own reviews; an admin's view of every review."""
    reviews = Review.objects.select_related("assignment").prefetch_related(
        "scores__criterion", "line_comments"
    )
    if roles.is_admin(user):  # type: ignore[arg-type]
        return reviews
    return reviews.filter(reviewer_id=user.pk)


def adjudication_queue(user: AnyUser) -> QuerySet[ReviewOutcome]:
    if not access.is_senior(user):
        return ReviewOutcome.objects.none()
    return (
        ReviewOutcome.objects.filter(status=OutcomeStatus.ADJUDICATION)
        .exclude(submission__reviews__reviewer_id=user.pk)
        .exclude(submission__task_version__task__owner_id=user.pk)
        .exclude(submission__submitter_id=user.pk)
        .select_related("submission__task_version__task")
        .order_by("updated_at")
    )


def submission_review_outcome(submission: Submission) -> dict[str, Any] | None:
    """The final review outcome as the submitter (API, webhooks) sees it, or None.
    Plain JSON values only (webhook bodies are dumped as they are). Reviewers stay
    anonymous: feedback is listed without names."""
    outcome = ReviewOutcome.objects.filter(
        submission=submission, status=OutcomeStatus.FINAL
    ).first()
    if outcome is None:
        return None
    reviews = current_reviews(submission)
    return {
        "decision": outcome.decision,
        "score": outcome.score,
        "score_spread": outcome.score_spread,
        "reviews": outcome.review_count,
        "adjudicated": outcome.adjudicated_by_id is not None,
        "feedback": [r.feedback for r in reviews],
        "reviewed_at": (
            outcome.finalized_at.isoformat().replace("+00:00", "Z")
            if outcome.finalized_at
            else None
        ),
    }


# Pairs ----------------------------------------------------------------------------------------


def next_pair(reviewer: User) -> tuple[Submission, Submission] | None:
    """An informative pair for pairwise review: two accepted submissions to the same
    task version, from different models where possible, with the closest scores,
    never offered to this reviewer before. Shown in random order (A/B)."""
    candidates = _pair_candidates(reviewer)
    if not candidates:
        return None
    scores = _scores(candidates)
    offered = {
        frozenset(pair)
        for pair in PairOffer.objects.filter(reviewer=reviewer).values_list(
            "submission_a_id", "submission_b_id"
        )
    }
    best: tuple[tuple[int, float, int], Submission, Submission] | None = None
    for group in _by_version(candidates).values():
        for first, second in combinations(group, 2):
            if frozenset((first.pk, second.pk)) in offered:
                continue
            same_model = int(first.model_name == second.model_name)
            closeness = abs(scores.get(first.pk, 0.0) - scores.get(second.pk, 0.0))
            key = (same_model, closeness, -max(first.pk, second.pk))
            if best is None or key < best[0]:
                best = (key, first, second)
    if best is None:
        return None
    pair = [best[1], best[2]]
    random.shuffle(pair)  # no position bias: the newer one is not always on the left
    return pair[0], pair[1]


def _pair_candidates(reviewer: User) -> list[Submission]:
    return list(
        Submission.objects.filter(
            status__in=[SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.REVIEWED],
            verdict=Verdict.ACCEPTED,
        )
        .exclude(task_version__task__owner_id=reviewer.pk)
        .exclude(submitter_id=reviewer.pk)
        .only("pk", "task_version_id", "model_name")
        .order_by("-pk")[: PAIR_POOL * PAIR_VERSIONS]
    )


def _by_version(candidates: Iterable[Submission]) -> dict[int, list[Submission]]:
    groups: dict[int, list[Submission]] = {}
    for submission in candidates:
        group = groups.setdefault(submission.task_version_id, [])
        if len(group) < PAIR_POOL:
            group.append(submission)
    return {k: v for k, v in list(groups.items())[:PAIR_VERSIONS] if len(v) >= 2}


def _scores(submissions: list[Submission]) -> dict[int, float]:
    """A final review score where there is one, otherwise the automatic total."""
    ids = [s.pk for s in submissions]
    final = dict(
        ReviewOutcome.objects.filter(
            submission_id__in=ids, status=OutcomeStatus.FINAL, score__isnull=False
        ).values_list("submission_id", "score")
    )
    latest: dict[int, int] = {}  # submission -> its latest run (ordered: the last one wins)
    runs = GradingRun.objects.filter(submission_id__in=ids).order_by("submission_id", "attempt")
    for run_id, submission_id in runs.values_list("pk", "submission_id"):
        latest[submission_id] = run_id
    awarded: dict[int, dict[str, float]] = {}
    for run_id, key, points in CriterionScore.objects.filter(
        grading_run_id__in=latest.values()
    ).values_list("grading_run_id", "criterion__key", "points"):
        awarded.setdefault(run_id, {})[key] = points
    criteria: dict[int, list[Criterion]] = {}
    for criterion in Criterion.objects.filter(
        rubric__version_id__in={s.task_version_id for s in submissions}
    ).select_related("rubric"):
        criteria.setdefault(criterion.rubric.version_id or 0, []).append(criterion)
    scores: dict[int, float] = {}
    for s in submissions:
        final_score = final.get(s.pk)
        if final_score is not None:
            scores[s.pk] = final_score
            continue
        scores[s.pk] = rubric_total(
            criteria.get(s.task_version_id, []), awarded.get(latest.get(s.pk, 0), {})
        )
    return scores


def open_pair(reviewer: AnyUser, offer_id: Any) -> PairOffer | None:
    return (
        PairOffer.objects.select_related("submission_a", "submission_b", "task_version__task")
        .filter(pk=offer_id, reviewer_id=reviewer.pk)
        .first()
    )


def pair_item(user: AnyUser, offer: PairOffer) -> dict[str, Any]:
    """Both sides of a pair as the reviewer sees them: blind, like ``review_item``."""
    return {
        "a": review_item(user, offer.submission_a),
        "b": review_item(user, offer.submission_b),
    }
