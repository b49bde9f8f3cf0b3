"""A submission graded end to end: PostgreSQL, Redis, a real Celery worker, the bwrap sandbox."""

import time

import pytest

from rubrics.models import CriterionScore
from submissions import services
from submissions.models import GradingRun, Submission, SubmissionStatus
from tests import factories

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HONEST = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0)
"""

WRONG = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.abs(x)
"""


# What a submission prints or names reaches its report: a NUL character (which
# PostgreSQL refuses in text and jsonb), a byte that is not UTF-8, a lone surrogate.
NOISY = """import sys

import torch
from torch import nn

print("before\\x00after")
sys.stdout.flush()
sys.stderr.buffer.write(b"err\\x00or \\xff\\n")
sys.stderr.buffer.flush()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0)
"""

ODD_OUTPUT = """from torch import nn


class Odd:
    pass


Odd.__module__ = "m\\x00"
Odd.__qualname__ = "W\\ud800\\x1b[31m"


class ModelNew(nn.Module):
    def forward(self, x):
        return Odd()
"""


DONE = {SubmissionStatus.GRADED, SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.FAILED}


def wait_for(submission_id, statuses, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        submission = Submission.objects.get(pk=submission_id)
        if submission.status in statuses:
            return submission
        time.sleep(0.5)
    raise AssertionError(f"submission {submission_id} still {submission.status} after {timeout}s")


def submit(files):
    task = factories.make_published_task()
    client = factories.make_user("api_client")
    return services.submission_create(
        version=task.current_version, submitter=client, files=files, model_name="m"
    )


def test_an_honest_submission_is_graded_accepted_and_scored(celery_worker_process):
    submission = submit({"solution.py": HONEST})

    # An accepted submission moves on to the reviewers' queue once the grading has
    # committed (a hook after the commit): wait for that, not for "graded".
    graded = wait_for(submission.pk, {SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.FAILED})

    assert graded.status == SubmissionStatus.AWAITING_REVIEW
    assert graded.verdict == "accepted"
    run = GradingRun.objects.get(submission=graded)
    assert run.attempt == 1
    assert run.report["hardware"]["sandbox"] == "bwrap"
    assert run.target_hardware is True
    correct = CriterionScore.objects.get(grading_run=run, criterion__key="correct")
    assert correct.points == 5


def test_a_wrong_answer_is_graded_wrong_and_earns_nothing(celery_worker_process):
    submission = submit({"solution.py": WRONG})

    graded = wait_for(submission.pk, DONE)

    assert graded.verdict == "wrong_answer"
    assert graded.status == SubmissionStatus.GRADED  # a failure is not queued for review
    score = CriterionScore.objects.get(submission=graded, criterion__key="correct")
    assert score.points == 0 and score.met is False


def test_a_redelivered_grading_job_does_not_grade_twice(celery_worker_process):
    from submissions.jobs import grade_submission_job

    submission = submit({"solution.py": HONEST})
    wait_for(submission.pk, DONE)

    # The broker delivers the same job again (e.g. a worker died before acking).
    assert grade_submission_job.delay(submission.pk).get(timeout=30) == "not claimed"

    assert GradingRun.objects.filter(submission=submission).count() == 1


def test_what_a_submission_prints_or_names_cannot_stop_its_report_being_stored(
    celery_worker_process,
):
    """A report that PostgreSQL refused left its submission running until the sweeper
    blamed the platform (and graded it again, up to the budget)."""
    noisy = submit({"solution.py": NOISY})
    odd = submit({"solution.py": ODD_OUTPUT})

    graded = wait_for(noisy.pk, {SubmissionStatus.AWAITING_REVIEW, SubmissionStatus.FAILED})
    assert graded.verdict == "accepted" and graded.attempts == 1
    logs = GradingRun.objects.get(submission=graded).report["logs"]
    assert logs["stdout"] == "before\N{REPLACEMENT CHARACTER}after\n"
    assert logs["stderr"].startswith("err\N{REPLACEMENT CHARACTER}or ")

    failed = wait_for(odd.pk, DONE)
    assert failed.verdict == "integrity_violation" and failed.attempts == 1
    run = GradingRun.objects.get(submission=failed)
    assert "not a plain torch.Tensor" in run.reason
    assert "\x00" not in run.reason and "\x00" not in str(run.report)
