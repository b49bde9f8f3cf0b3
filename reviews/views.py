"""Review screens: the queue, one review, pairwise review, adjudication and the
dashboards. Thin: reads through ``reviews.selectors``, writes through
``reviews.services``; what a page shows of a submission is blind (see selectors)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from submissions.models import Submission
from tasks.timelines import answer_timelines

from . import access, rendering, selectors, services, stats
from .forms import AdjudicationForm, PairForm, ReviewForm, initial_from_review
from .models import AssignmentStatus, OutcomeStatus, Review, ReviewAssignment, ReviewOutcome
from .serving import serving_view

View = Callable[..., HttpResponse]
MAIN_FILE_NAMES = ("solution.py", "submission.py", "kernel.py")


def reviewer_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not access.is_reviewer(request.user):
            raise PermissionDenied("reviewers only")
        return view(request, *args, **kwargs)

    return wrapper


def _user(request: HttpRequest) -> User:
    return cast(User, request.user)


# Dashboard and queue --------------------------------------------------------------------------


@reviewer_required
@require_http_methods(["GET"])
def dashboard(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    services.assignments_expire()
    figures = stats.reviewer_dashboard(user)
    days = figures["throughput"]
    context = {
        "section": "reviews",
        "claim": selectors.active_claim(user),
        "queue_size": selectors.queue_size(user),
        "figures": figures,
        "throughput_chart": rendering.bar_chart(
            [d.isoformat() for d, _ in days], [n for _, n in days], title="Reviews per day"
        ),
        "recent": Review.objects.filter(reviewer=user)
        .select_related("assignment", "submission__task_version", "submission__review_outcome")
        .order_by("-created_at")[:20],
        "adjudication": selectors.adjudication_queue(user)[:50],
        "is_senior": access.is_senior(user),
    }
    return render(request, "reviews/dashboard.html", context)


@reviewer_required
@require_POST
def claim_next(request: HttpRequest) -> HttpResponse:
    assignment = services.assignment_claim_next(reviewer=_user(request))
    if assignment is None:
        messages.info(request, "Nothing left in your queue.")
        return redirect("reviews-dashboard")
    return redirect("reviews-item", pk=assignment.pk)


@reviewer_required
@require_POST
def release(request: HttpRequest, pk: int) -> HttpResponse:
    """Skip: hand the item back and go on to the next one (the skipped item comes
    back to this reviewer last)."""
    try:
        services.assignment_release(assignment_id=pk, reviewer=_user(request))
    except services.ReviewError as exc:
        messages.error(request, str(exc))
        return redirect("reviews-dashboard")
    messages.info(request, "Skipped: the item went back to the queue.")
    return claim_next(request)


# One review -----------------------------------------------------------------------------------


@reviewer_required
@require_http_methods(["GET", "POST"])
def item(request: HttpRequest, pk: int) -> HttpResponse:
    user = _user(request)
    assignment = selectors.assignment_for(user, pk)
    if assignment is None:
        raise Http404
    submission = assignment.submission
    review = Review.objects.filter(assignment=assignment).first()
    criteria = selectors.criteria_of(submission)
    form = ReviewForm(
        request.POST or None,
        criteria=criteria,
        initial=initial_from_review(review) if review is not None else None,
    )
    if request.method == "POST":
        saved = _save_review(request, form, assignment, review)
        if saved is not None:
            return redirect("reviews-item", pk=assignment.pk)
    context = item_context(user, submission, review=review)
    outcome = ReviewOutcome.objects.filter(submission=submission).first()
    context |= {
        "section": "reviews",
        "assignment": assignment,
        "form": form,
        "fields": _criterion_fields(form, context["rubric"]),
        "review": review,
        "outcome": outcome,
        "editable": review is None
        or (outcome is not None and outcome.status != OutcomeStatus.FINAL),
        "expired": assignment.status == AssignmentStatus.CLAIMED
        and assignment.expires_at is not None
        and assignment.expires_at < timezone.now(),
        "others": selectors.other_reviews(review) if review is not None else [],
    }
    return render(request, "reviews/item.html", context)


def _save_review(
    request: HttpRequest, form: ReviewForm, assignment: ReviewAssignment, review: Review | None
) -> Review | None:
    if not form.is_valid():
        messages.error(request, "Some fields need attention (marked below).")
        return None
    try:
        if review is None:
            saved = services.review_submit(
                assignment_id=assignment.pk, reviewer=_user(request), data=form.to_input()
            )
            messages.success(request, "Review submitted.")
        else:
            saved = services.review_edit(
                review_id=review.pk, editor=_user(request), data=form.to_input()
            )
            messages.success(request, "Review updated.")
    except services.ReviewError as exc:
        form.add_error(None, str(exc))
        return None
    return saved


def _criterion_fields(form: ReviewForm, rubric: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each rubric row with its bound form fields, for the template."""
    rows = []
    for row in rubric:
        key = row["key"]
        fields = {"comment": form[f"comment-{key}"]}
        if row["automatic"]:
            fields |= {"overturn": form[f"overturn-{key}"], "reason": form[f"reason-{key}"]}
        else:
            fields["level"] = form[f"level-{key}"]
        rows.append({**row, **fields})
    return rows


def item_context(
    user: Any, submission: Submission, *, review: Review | None = None
) -> dict[str, Any]:
    """The blind review item, with code highlighted, diffs and the timing chart."""
    item = selectors.review_item(user, submission)
    comments: dict[tuple[str, int], list[Any]] = {}
    if review is not None:
        for comment in review.line_comments.all():
            comments.setdefault((comment.path, comment.line), []).append(comment)
    code = [
        {
            "path": path,
            "lines": [
                {"number": i, "html": html, "comments": comments.get((path, i), [])}
                for i, html in enumerate(rendering.highlighted_lines(path, text), start=1)
            ],
        }
        for path, text in sorted(item["files"].items())
    ]
    report = item["report"]
    return {
        "item": item,
        "task": item["task"],
        "code": code,
        "diffs": _fix_diffs(report) or _diffs(item),
        "report": report,
        "rubric": item["rubric"],
        "timing_chart": rendering.timing_chart(report["timing"]) if report else None,
        "serving": serving_view(report),
        "timelines": answer_timelines(
            submission.task_version, ((report or {}).get("answer") or {}).get("fields")
        ),
    }


def main_file(files: dict[str, str]) -> str | None:
    """The submission file a diff compares: the only one, a conventional name, or
    the longest."""
    if not files:
        return None
    if len(files) == 1:
        return next(iter(files))
    for name in MAIN_FILE_NAMES:
        if name in files:
            return name
    return max(sorted(files), key=lambda path: len(files[path]))


def _fix_diffs(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A debugging fix as the grader applied it, file by file, against the source."""
    if not report or not report.get("fix_diff"):
        return []
    diffs = []
    for old, new, rows in rendering.unified_diff_files(report["fix_diff"]):
        added, removed = rendering.diff_stat(rows)
        diffs.append(
            {
                "kind": "source",
                "base": old,
                "target": new,
                "rows": rows,
                "added": added,
                "removed": removed,
            }
        )
    return diffs


def _diffs(item: dict[str, Any]) -> list[dict[str, Any]]:
    files: dict[str, str] = item["files"]
    main = main_file(files)
    diffs = []
    for kind in ("starter", "reference"):
        for base in item["task_files"][kind]:
            target = base.path if base.path in files else main
            if target is None:
                continue
            rows = rendering.diff_rows(base.content, files[target])
            added, removed = rendering.diff_stat(rows)
            diffs.append(
                {
                    "kind": kind,
                    "base": base.path,
                    "target": target,
                    "rows": rows,
                    "added": added,
                    "removed": removed,
                }
            )
    return diffs


# Pairwise -------------------------------------------------------------------------------------


@reviewer_required
@require_http_methods(["GET", "POST"])
def pairs(request: HttpRequest) -> HttpResponse:
    offer = services.pair_offer_next(reviewer=_user(request))
    if offer is None:
        return render(request, "reviews/pair_empty.html", {"section": "reviews"})
    return redirect("reviews-pair", offer_id=offer.pk)


@reviewer_required
@require_http_methods(["GET", "POST"])
def pair(request: HttpRequest, offer_id: Any) -> HttpResponse:
    user = _user(request)
    offer = selectors.open_pair(user, offer_id)
    if offer is None:
        raise Http404
    if not offer.is_open:
        return redirect("reviews-pairs")
    criteria = selectors.criteria_of(offer.submission_a)
    form = PairForm(request.POST or None, criteria=criteria)
    if request.method == "POST" and form.is_valid():
        try:
            services.pairwise_judge(offer_id=offer.pk, reviewer=user, data=form.to_input())
        except services.ReviewError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Judgement recorded.")
            return redirect("reviews-pairs")
    a = item_context(user, offer.submission_a)
    b = item_context(user, offer.submission_b)
    a_files, b_files = a["item"]["files"], b["item"]["files"]
    a_main, b_main = main_file(a_files), main_file(b_files)
    between = rendering.diff_rows(a_files[a_main], b_files[b_main]) if a_main and b_main else []
    context = {
        "section": "reviews",
        "offer": offer,
        "a": a,
        "b": b,
        "task": a["task"],
        "between": between,
        "between_stat": rendering.diff_stat(between),
        "form": form,
        "criterion_fields": [(c, form[f"winner-{c.key}"]) for c in form.human],
    }
    return render(request, "reviews/pair.html", context)


@reviewer_required
@require_POST
def pair_skip(request: HttpRequest, offer_id: Any) -> HttpResponse:
    try:
        services.pair_offer_skip(offer_id=offer_id, reviewer=_user(request))
    except services.ReviewError as exc:
        messages.error(request, str(exc))
    return redirect("reviews-pairs")


# Adjudication ---------------------------------------------------------------------------------


@reviewer_required
@require_http_methods(["GET"])
def adjudication_list(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    if not access.is_senior(user):
        raise PermissionDenied("senior reviewers only")
    context = {"section": "reviews", "outcomes": selectors.adjudication_queue(user)}
    return render(request, "reviews/adjudication_list.html", context)


@reviewer_required
@require_http_methods(["GET", "POST"])
def adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    user = _user(request)
    outcome = get_object_or_404(selectors.adjudication_queue(user), pk=pk)
    form = AdjudicationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.adjudication_decide(
                outcome_id=outcome.pk,
                adjudicator=user,
                decision=form.cleaned_data["decision"],
                reason=form.cleaned_data["reason"],
                score=form.cleaned_data["score"],
            )
        except services.ReviewError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Decision recorded; it is final.")
            return redirect("reviews-adjudication")
    submission = outcome.submission
    context = item_context(user, submission) | {
        "section": "reviews",
        "outcome": outcome,
        "form": form,
        "reviews": selectors.current_reviews(submission).prefetch_related(
            "scores__criterion", "line_comments"
        ),
    }
    return render(request, "reviews/adjudicate.html", context)


# Admin overview -------------------------------------------------------------------------------


@reviewer_required
@require_http_methods(["GET"])
def overview(request: HttpRequest) -> HttpResponse:
    if not access.is_senior(request.user):
        raise PermissionDenied("senior reviewers and admins only")
    figures = stats.overview()
    days = figures["throughput"]
    context = {
        "section": "reviews",
        "figures": figures,
        "throughput_chart": rendering.bar_chart(
            [d.isoformat() for d, _ in days], [n for _, n in days], title="Reviews per day"
        ),
    }
    return render(request, "reviews/overview.html", context)
