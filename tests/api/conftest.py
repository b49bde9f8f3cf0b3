"""Users in every role, their tokens, and a published task with hidden files that
must never come out of the API."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import scopes as scope_names
from accounts import services as account_services
from accounts.models import ApiToken
from benchwright import roles
from submissions import services as submission_services
from tasks import services as task_services
from tasks.bundle import load_bundle
from tasks.models import FileRole, Task, TaskFile, Visibility
from tests import factories, recorded

# The Celery worker of the end-to-end webhook tests (tests/conftest.py) inherits this
# environment: retries after 0.3 s and 0.6 s instead of minutes. Set at import, before
# any fixture starts the worker.
os.environ.setdefault("BENCHWRIGHT_WEBHOOK_RETRY_DELAYS", "0.3,0.6")

# Planted in the task's hidden files and grading settings; no API body may hold it.
SECRET = "SECRET-7f3a91-hidden"

# The graded submission's report: a real wrong answer on row-softmax, with the trial
# seeds and messages, and the stderr, that the grader really writes (tests/recorded.py).
GRADED = "row-softmax-no-max-subtraction"
CATALOG = Path(__file__).resolve().parents[2] / "reference_solutions"


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


def bearer(token: str | None) -> APIClient:
    client = APIClient()
    if token is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def token_for(user: Any, scopes: list[str] | None = None, **fields: Any) -> str:
    if scopes is None:
        scopes = sorted(scope_names.scopes_allowed(scope_names.user_roles(user)))
    _, token = account_services.token_create(user=user, name="test", scopes=scopes, **fields)
    return token


def publish_with_secrets(owner: Any, **fields: Any) -> Task:
    task = factories.make_task(owner, **fields)
    TaskFile.objects.filter(task=task, path="reference.py").update(
        content=factories.REFERENCE + f"\n# {SECRET}\n"
    )
    TaskFile.objects.create(
        task=task, path="solution.py", content=f"# {SECRET}\n", role=FileRole.SOLUTION
    )
    TaskFile.objects.create(
        task=task,
        path="bad/cheat.py",
        content=f"# {SECRET}\n",
        role=FileRole.NEGATIVE,
        expected_verdict="wrong_answer",
    )
    TaskFile.objects.create(
        task=task,
        path="starter.py",
        content="class ModelNew: ...\n",
        role=FileRole.STARTER,
        visibility=Visibility.PROMPT,
    )
    task.grading = {
        "format": "kernelbench",
        "language": "pytorch",
        "trials": 5,
        "shapes": [{"name": "small", "dim": 64, "scale": 1e4, "hosts": ["cpu"]}],
        "tolerances": {"float32": {"atol": 1e-5, "rtol": 1e-5}},
        "timing": {"warmup": 1, "budget_s": 2.0},
        "reference_outputs": SECRET,
    }
    task.save()
    reviewer = factories.make_user(roles.REVIEWER)
    factories.mark_validated(task)
    factories.mark_validated(task)
    task_services.task_submit_for_review(task=task, user=owner)
    task_services.task_publish(task=Task.objects.get(pk=task.pk), reviewer=reviewer)
    return Task.objects.get(pk=task.pk)


@pytest.fixture
def task_author(db):
    return factories.make_user(roles.AUTHOR, username="task-author")


@pytest.fixture
def owner(db):
    """The API client whose submissions, tokens and webhooks are under test."""
    return factories.make_user(roles.API_CLIENT, username="owner")


@pytest.fixture
def colleague(db):
    """Another API client: same role as the owner, none of its objects."""
    return factories.make_user(roles.API_CLIENT, username="colleague")


@pytest.fixture
def outsider(db):
    """A user with no role at all."""
    return factories.make_user(username="outsider")


@pytest.fixture
def reviewer(db):
    return factories.make_user(roles.REVIEWER, username="reviewer")


@pytest.fixture
def admin(db):
    return factories.make_user(roles.ADMIN, username="admin", is_staff=True)


@pytest.fixture
def task(task_author):
    return publish_with_secrets(task_author, slug="row-softmax", tags=["reduction", "softmax"])


@pytest.fixture
def owner_token(owner):
    return token_for(owner)


@pytest.fixture
def graded_submission(task, owner):
    """The owner's submission, graded with a real report: a wrong answer whose trial
    seeds and messages a submitter must not see."""
    assert task.current_version is not None
    return graded_with(task, owner, GRADED, model_name="model-a", run_id="run-1")


def graded_with(task: Task, submitter: Any, name: str, **fields: Any) -> Any:
    """A submission of the recorded grading ``name``'s files, graded with its report
    through the trusted store, as a worker's report would be stored."""
    assert task.current_version is not None
    fields.setdefault("labels", {"temperature": "0.2"})
    submission = submission_services.submission_create(
        version=task.current_version, submitter=submitter, files=recorded.files(name), **fields
    )
    assert submission_services.submission_claim(submission_id=submission.pk)
    run = submission_services.grading_store(
        submission_id=submission.pk, attempt=1, report=recorded.report(name)
    )
    assert run is not None
    submission.refresh_from_db()
    return submission


def publish_catalog_task(slug: str) -> Task:
    """A task of the built-in catalog, imported and published as ``manage.py
    import_tasks`` does: its real grading settings and rubric, so the recorded
    reports of its submissions are scored as in production."""
    admin = get_user_model().objects.filter(username="catalog-admin").first()
    if admin is None:
        admin = factories.make_user(roles.ADMIN, username="catalog-admin")
    result = task_services.bundle_import(bundle=load_bundle(CATALOG / slug), user=admin)
    return result.task


def expired(user: Any) -> str:
    token = token_for(user)
    ApiToken.objects.filter(prefix=token[3:15]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    return token


def revoked(user: Any) -> str:
    token = token_for(user)
    account_services.token_revoke(token=ApiToken.objects.get(prefix=token[3:15]))
    return token


def submission_body(task_slug: str, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "task": task_slug,
        "model": "model-a",
        "run_id": "run-1",
        "labels": {"temperature": "0.2"},
        "files": [{"path": "solution.py", "content": "class ModelNew: ...\n"}],
    }
    body.update(overrides)
    return body
