"""Editing a task in the UI changes only what changed in its task.toml.

The catalog's bundles are hand-written: comments, an order, inline tables. An
edit of one rubric title must show in the history as a one-line change."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from benchwright import roles
from frontend.authoring_forms import CriterionForm
from tasks import services
from tasks.bundle import load_bundle
from tasks.models import Task, TaskFile
from tests import factories

pytestmark = pytest.mark.django_db

BUNDLE = Path(__file__).resolve().parents[2] / "reference_solutions" / "cpu-masked-mean-pool"


@pytest.fixture
def admin():
    return factories.make_user(roles.ADMIN, roles.AUTHOR, roles.REVIEWER, username="boss")


@pytest.fixture
def task(admin) -> Task:
    result = services.bundle_import(bundle=load_bundle(BUNDLE), user=admin)
    services.task_revise(task=result.task, user=admin)
    return Task.objects.get(pk=result.task.pk)


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="")
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def edit_title(client: Client, task: Task, key: str, title: str) -> None:
    criterion = task.rubric.criteria.get(key=key)
    data = {k: v for k, v in CriterionForm.initial_from(criterion).items() if v is not None}
    data["title"] = title
    response = client.post(reverse("task-criterion-edit", args=[task.slug, criterion.pk]), data)
    assert response.status_code == 302, response.content.decode()[:2000]


def test_one_rubric_title_edited_in_the_ui_is_a_one_line_change(admin, task):
    original = (BUNDLE / "task.toml").read_text()
    client = Client()
    client.force_login(admin)

    edit_title(client, task, "clarity", "Clarity of the kernel")

    text = services.bundle_render(task=task)["task.toml"].decode()
    assert changed_lines(original, text) == [
        '-title = "Clarity"',
        '+title = "Clarity of the kernel"',
    ]
    assert text.count("#") == original.count("#")  # the comments are still there
    history = client.get(reverse("task-history", args=[task.slug]), {"old": "1", "new": "draft"})
    html = history.content.decode()
    assert "1 file changed" in html and "task.toml" in html


def test_a_new_version_keeps_the_text_and_the_next_edit_builds_on_it(admin, task):
    client = Client()
    client.force_login(admin)
    edit_title(client, task, "clarity", "Clarity of the kernel")
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=admin)
    second = services.task_publish(task=task, reviewer=factories.make_user(roles.REVIEWER))

    assert "# The first set is the largest and is the one timed." in second.manifest
    services.task_revise(task=task, user=admin)
    edit_title(client, Task.objects.get(pk=task.pk), "explanation", "Explanation of speed")
    text = services.bundle_render(task=task)["task.toml"].decode()
    assert changed_lines(second.manifest, text) == [
        '-title = "Explanation"',
        '+title = "Explanation of speed"',
    ]


def test_a_client_sees_that_hidden_files_changed_between_versions(admin, task):
    reference = TaskFile.objects.get(task=task, path="reference.py")
    services.task_file_save(
        task=task,
        user=admin,
        file=reference,
        content=reference.content + "\n# a clarifying comment\n",
        visibility=reference.visibility,
        role=reference.role,
    )
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=admin)
    services.task_publish(task=task, reviewer=factories.make_user(roles.REVIEWER))
    solver = Client()
    solver.force_login(factories.make_user(roles.API_CLIENT, username="solver"))

    html = solver.get(
        reverse("task-history", args=[task.slug]), {"old": "1", "new": "2"}
    ).content.decode()

    summary = re.search(r'<p class="diff-summary">(.*?)</p>', html, re.S)
    assert summary is not None
    assert "hidden files or task settings changed" in summary.group(1)
    assert "no differences" not in summary.group(1)
    assert "clarifying comment" not in html
