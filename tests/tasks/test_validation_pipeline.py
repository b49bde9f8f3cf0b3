"""Validation end to end: the real worker grades the solution and a negative in bwrap."""

import time

import pytest

from tasks import validation
from tasks.models import FileRole, TaskFile, ValidationRun, ValidationStatus, Visibility
from tests import factories

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SOLUTION = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
"""

NEGATIVE = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clone()  # forgets the ReLU
"""


def test_a_valid_task_passes_and_can_go_to_review(celery_worker_process):
    task = factories.make_task()
    TaskFile.objects.create(task=task, path="solution.py", content=SOLUTION, role=FileRole.SOLUTION)
    TaskFile.objects.create(
        task=task,
        path="bad/identity.py",
        content=NEGATIVE,
        role=FileRole.NEGATIVE,
        expected_verdict="wrong_answer",
        visibility=Visibility.HIDDEN,
    )

    run = validation.validation_start(task=task, user=task.owner)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        run = ValidationRun.objects.get(pk=run.pk)
        if run.status != ValidationStatus.RUNNING:
            break
        time.sleep(0.5)

    verdicts = {r.path: r.verdict for r in run.results.all()}
    assert verdicts == {"solution.py": "accepted", "bad/identity.py": "wrong_answer"}
    assert run.status == ValidationStatus.PASSED
    assert validation.validation_passed_for_draft(task)
