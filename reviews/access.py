"""Who may review what. Views and API endpoints call these; none hand-rolls a check."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group

from benchwright import roles
from submissions.models import Submission

from .models import SENIOR_REVIEWER

AnyUser = AbstractBaseUser | AnonymousUser


def ensure_senior_group(**_: Any) -> None:
    Group.objects.get_or_create(name=SENIOR_REVIEWER)


def grant_senior(user: Any) -> None:
    """Make a reviewer a senior reviewer (who adjudicates)."""
    ensure_senior_group()
    roles.grant(user, roles.REVIEWER)
    user.groups.add(Group.objects.get(name=SENIOR_REVIEWER))


def is_reviewer(user: AnyUser) -> bool:
    return roles.has_role(user, roles.REVIEWER)  # type: ignore[arg-type]


def is_senior(user: AnyUser) -> bool:
    """Admins, and reviewers in the ``senior_reviewer`` group."""
    if roles.is_admin(user):  # type: ignore[arg-type]
        return True
    return is_reviewer(user) and user.groups.filter(name=SENIOR_REVIEWER).exists()  # type: ignore[union-attr]


def may_review(user: AnyUser, submission: Submission) -> bool:
    """A reviewer, who neither authored the task nor made the submission."""
    if not is_reviewer(user):
        return False
    task_owner_id = submission.task_version.task.owner_id
    return user.pk not in (task_owner_id, submission.submitter_id)
