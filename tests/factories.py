"""Small factories for tests: real rows in the real database, no fixture files."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from benchwright import roles
from rubrics.models import Criterion, CriterionKind, Rubric
from submissions.fingerprint import solution_key
from submissions.models import Submission, SubmissionFile
from tasks import services as task_services
from tasks.models import (
    FileRole,
    Task,
    TaskFile,
    TaskStatus,
    TaskVersion,
    ValidationRun,
    ValidationStatus,
    Visibility,
)

_counter = itertools.count(1)

REFERENCE = """import torch
from torch import nn

batch_size = 4
dim = 64


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


def make_user(*role_names: str, username: str | None = None, **extra: Any) -> User:
    name = username or f"user{next(_counter)}"
    user = get_user_model().objects.create_user(
        username=name, password="correct horse battery", **extra
    )
    roles.grant(user, *role_names)
    return user  # type: ignore[return-value]


def make_task(owner: User | None = None, **fields: Any) -> Task:
    owner = owner or make_user(roles.AUTHOR)
    n = next(_counter)
    defaults: dict[str, Any] = {
        "slug": f"task-{n}",
        "title": f"Task {n}",
        "statement": "Compute **relu**.",
        "hardware": "cpu",
        "grading": {"format": "kernelbench", "language": "pytorch", "trials": 5},
    }
    defaults.update(fields)
    task = Task.objects.create(owner=owner, **defaults)
    TaskFile.objects.create(
        task=task,
        path="statement.md",
        content=task.statement,
        visibility=Visibility.PROMPT,
        role=FileRole.STATEMENT,
    )
    TaskFile.objects.create(
        task=task,
        path="reference.py",
        content=REFERENCE,
        visibility=Visibility.HIDDEN,
        role=FileRole.REFERENCE,
    )
    rubric = Rubric.objects.create(task=task)
    Criterion.objects.create(
        rubric=rubric,
        key="correct",
        title="Correct",
        points=5,
        kind=CriterionKind.AUTOMATIC,
        rule={"type": "verdict", "equals": "accepted"},
        position=0,
    )
    Criterion.objects.create(
        rubric=rubric,
        key="clarity",
        title="Clarity",
        points=2,
        kind=CriterionKind.HUMAN,
        levels=[{"score": 0, "descriptor": "Unclear"}, {"score": 2, "descriptor": "Clear"}],
        position=1,
    )
    return task


def mark_validated(task: Task) -> ValidationRun:
    """Record that the draft, as it is now, passed validation (as a real run would)."""
    return ValidationRun.objects.create(
        task=task,
        content_hash=task_services.task_draft_hash(task),
        status=ValidationStatus.PASSED,
        created_by=task.owner,
    )


def make_published_task(owner: User | None = None, **fields: Any) -> Task:
    """A task frozen into a version and published, the way a reviewer would."""
    task = make_task(owner, **fields)
    reviewer = make_user(roles.REVIEWER)
    mark_validated(task)
    task_services.task_submit_for_review(task=task, user=task.owner)
    task.refresh_from_db()
    task_services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    assert task.status == TaskStatus.PUBLISHED
    return task


def make_submission(
    version: TaskVersion | None = None,
    submitter: User | None = None,
    files: dict[str, str] | None = None,
    **fields: Any,
) -> Submission:
    if version is None:
        task = make_published_task()
        assert task.current_version is not None
        version = task.current_version
    submitter = submitter or make_user(roles.API_CLIENT)
    files = files or {"solution.py": "print('hi')\n"}
    fields.setdefault("code_key", solution_key(files.items()))  # as submission_create does
    submission = Submission.objects.create(
        task_version=version, submitter=submitter, model_name="test-model", **fields
    )
    for path, content in files.items():
        SubmissionFile.objects.create(submission=submission, path=path, content=content)
    return submission
