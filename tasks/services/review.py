"""Task review: comments and decisions on a draft in review."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from benchwright import roles

from ..models import (
    ReviewDecision,
    Task,
    TaskReview,
    TaskReviewComment,
    TaskStatus,
)
from .lifecycle import _require, task_publish, task_request_changes
from .manifests import draft_manifest_text, task_draft_hash


def reviewer_may_decide(user: User, task: Task) -> bool:
    """Reviewers review others' tasks; an admin may also review their own."""
    if not roles.has_role(user, roles.REVIEWER):
        return False
    return task.owner_id != user.pk or roles.is_admin(user)


def _require_reviewer(user: User, task: Task) -> None:
    _require(reviewer_may_decide(user, task), "only a reviewer other than the author may review")
    _require(task.status == TaskStatus.IN_REVIEW, f"{task.slug} is not in review")


def task_review_comment_add(
    *, task: Task, reviewer: User, path: str, line: int, body: str
) -> TaskReviewComment:
    """A pending comment on one line of a draft file; it goes to the author with the
    reviewer's decision."""
    _require_reviewer(reviewer, task)
    file = task.files.filter(path=path).first()
    if file is None:
        raise ValidationError({"path": [f"{path!r} is not a file of this task"]})
    lines = file.content.splitlines()
    if not 1 <= line <= max(len(lines), 1):
        raise ValidationError({"line": [f"{path} has no line {line}"]})
    body = body.strip()
    if not body:
        raise ValidationError({"body": ["write a comment"]})
    return TaskReviewComment.objects.create(
        task=task,
        author=reviewer,
        path=path,
        line=line,
        line_text=lines[line - 1] if lines else "",
        content_hash=task_draft_hash(task),
        body=body,
    )


def task_review_comment_delete(*, comment: TaskReviewComment, user: User) -> None:
    _require(
        comment.author_id == user.pk and comment.review_id is None,
        "only its author can delete a comment, before deciding",
    )
    comment.delete()


@transaction.atomic
def task_review_decide(
    *, task: Task, reviewer: User, decision: str, comment: str = ""
) -> TaskReview:
    """Approve (publish an immutable version) or request changes (back to the author,
    with the overall comment and the reviewer's pending line comments).

    The reviewed draft is kept on the review, so the next review shows what changed.
    """
    task = Task.objects.select_for_update().get(pk=task.pk)
    _require_reviewer(reviewer, task)
    if decision not in ReviewDecision.values:
        raise ValidationError({"decision": [f"{decision!r} is not a decision"]})
    pending = TaskReviewComment.objects.filter(task=task, review=None, author=reviewer)
    if decision == ReviewDecision.CHANGES_REQUESTED and not (comment.strip() or pending.exists()):
        raise ValidationError({"comment": ["say what should change (or comment on a line)"]})
    files = {f.path: f.content for f in task.files.all()}
    review = TaskReview(
        task=task,
        reviewer=reviewer,
        decision=decision,
        comment=comment.strip(),
        content_hash=task_draft_hash(task),
        manifest=draft_manifest_text(task),
        files=files,
    )
    if decision == ReviewDecision.APPROVED:
        review.version = task_publish(task=task, reviewer=reviewer)
    else:
        task_request_changes(task=task, reviewer=reviewer)
    review.save()
    pending.update(review=review)
    return review
