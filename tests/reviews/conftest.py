"""A task with a full rubric (automatic, penalty, human criteria), submissions
graded through the real grading_store, and reviewers."""

from __future__ import annotations

from typing import Any

import pytest

from benchwright import roles
from reviews import access
from reviews import services as review_services
from reviews.models import PairOffer, ReviewAssignment, ReviewOutcome, ReviewPolicy
from rubrics.models import Criterion, CriterionKind
from submissions import services as submission_services
from submissions.models import Submission, SubmissionStatus
from tasks import services as task_services
from tasks.models import FileRole, Task, TaskFile, Visibility
from tests import factories, recorded

# Identity of the submissions under review: no page or API body a reviewer gets may hold them.
MODEL = "model-zeta-secret-7"
RUN = "run-omega-4242"
CLIENT = "client-kappa-9"
LABEL = "label-value-sigma"

STARTER = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        raise NotImplementedError
"""

SOLUTION = '''import torch
from torch import nn


class ModelNew(nn.Module):
    """Clamp below at zero: relu without the reference op."""

    def forward(self, x):
        return torch.clamp(x, min=0)  # one pass over memory
'''


def report(name: str = recorded.ACCEPTED) -> dict[str, Any]:
    """A report the real grader wrote (``tests/recorded.py``): accepted by default."""
    return recorded.report(name)


def tainted_report() -> dict[str, Any]:
    """A real integrity violation (an input modified in place): the penalty applies."""
    return recorded.report(recorded.INTEGRITY_VIOLATION)


def publish_rubric_task(owner: Any, **fields: Any) -> Task:
    """A published task whose rubric has: correct (+5, automatic), integrity penalty
    (-3, automatic: rule holds when there are findings), clarity (+2, human, levels
    0/1/2) and numerical-care (+3, human, levels 0..3). 10 positive points."""
    task = factories.make_task(owner, **fields)
    TaskFile.objects.create(
        task=task,
        path="starter.py",
        content=STARTER,
        visibility=Visibility.PROMPT,
        role=FileRole.STARTER,
    )
    rubric = task.rubric
    Criterion.objects.filter(rubric=rubric, key="clarity").update(
        levels=[
            {"score": 0, "descriptor": "Hard to follow"},
            {"score": 1, "descriptor": "Readable with effort"},
            {"score": 2, "descriptor": "Clear at a glance"},
        ],
        position=2,
    )
    Criterion.objects.create(
        rubric=rubric,
        key="integrity",
        title="Integrity penalty",
        points=-3,
        kind=CriterionKind.AUTOMATIC,
        rule={"type": "integrity", "clean": False},
        position=1,
    )
    Criterion.objects.create(
        rubric=rubric,
        key="numerical-care",
        title="Numerical care",
        points=3,
        kind=CriterionKind.HUMAN,
        levels=[{"score": s, "descriptor": f"level {s}"} for s in range(4)],
        position=3,
    )
    factories.mark_validated(task)
    task_services.task_submit_for_review(task=task, user=task.owner)
    task.refresh_from_db()
    task_services.task_publish(task=task, reviewer=factories.make_user(roles.REVIEWER))
    task.refresh_from_db()
    return task


def graded(
    task: Task,
    *,
    model: str = MODEL,
    run_id: str = RUN,
    submitter: Any = None,
    grading: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
    enter_queue: bool = True,
) -> Submission:
    """A submission graded by grading_store, entered into the review queue as the
    hook would once the grading commits."""
    assert task.current_version is not None
    submission = factories.make_submission(
        task.current_version,
        submitter=submitter,
        files=files or {"solution.py": SOLUTION},
        run_id=run_id,
        labels={"team": LABEL},
    )
    Submission.objects.filter(pk=submission.pk).update(model_name=model)
    assert submission_services.submission_claim(submission_id=submission.pk)
    submission_services.grading_store(
        submission_id=submission.pk, attempt=1, report=grading or report()
    )
    if enter_queue:
        review_services.review_queue_enter(submission_id=submission.pk)
    submission.refresh_from_db()
    # A broken reference (task_error) fails the submission: it is never graded.
    settled = (
        SubmissionStatus.FAILED
        if (grading or {}).get("verdict") == "task_error"
        else SubmissionStatus.GRADED
    )
    assert submission.status == (SubmissionStatus.AWAITING_REVIEW if enter_queue else settled)
    return submission


def set_policy(task: Task, required: int, **fields: Any) -> ReviewPolicy:
    policy, _ = ReviewPolicy.objects.update_or_create(
        task=task, defaults={"reviews_required": required, **fields}
    )
    return policy


def full_review(
    *,
    decision: str = "accept",
    clarity: float = 2,
    care: float = 3,
    overturn: dict[str, str] | None = None,
    feedback: str = "Clean and correct.",
    comments: tuple[review_services.CommentInput, ...] = (),
) -> review_services.ReviewInput:
    scores = {
        "clarity": review_services.ScoreInput(level=clarity),
        "numerical-care": review_services.ScoreInput(level=care),
    }
    for key, reason in (overturn or {}).items():
        scores[key] = review_services.ScoreInput(overturned=True, reason=reason)
    return review_services.ReviewInput(
        decision=decision, feedback=feedback, scores=scores, comments=comments
    )


def next_claim(reviewer: Any) -> ReviewAssignment:
    """The reviewer's next item, which the test expects there to be."""
    assignment = review_services.assignment_claim_next(reviewer=reviewer)
    assert assignment is not None, "nothing to claim"
    return assignment


def next_offer(reviewer: Any) -> PairOffer:
    pair = review_services.pair_offer_next(reviewer=reviewer)
    assert pair is not None, "no pair to judge"
    return pair


def outcome_of(submission: Submission) -> ReviewOutcome:
    return ReviewOutcome.objects.get(submission=submission)


def review_as(reviewer: Any, **kwargs: Any) -> Any:
    """Claim the reviewer's next item and submit a review of it."""
    assignment = next_claim(reviewer)
    return review_services.review_submit(
        assignment_id=assignment.pk, reviewer=reviewer, data=full_review(**kwargs)
    )


def open_slots(submission: Submission) -> int:
    return ReviewAssignment.objects.filter(submission=submission, status="open").count()


@pytest.fixture
def task_author(db):
    return factories.make_user(roles.AUTHOR, username="task-author")


@pytest.fixture
def client_user(db):
    return factories.make_user(roles.API_CLIENT, username=CLIENT)


@pytest.fixture
def task(task_author):
    return publish_rubric_task(task_author, slug="relu-review", title="ReLU, reviewed")


@pytest.fixture
def make_reviewer(db):
    def make(name: str) -> Any:
        return factories.make_user(roles.REVIEWER, username=name)

    return make


@pytest.fixture
def senior(db):
    user = factories.make_user(roles.REVIEWER, username="senior")
    access.grant_senior(user)
    return user
