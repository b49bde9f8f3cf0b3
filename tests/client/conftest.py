"""The CLI against a live server (pytest-django's, on 127.0.0.1) and the real database."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.cache import cache

from accounts import services as account_services
from benchwright import roles
from submissions import services as submission_services
from tests import factories
from tests.api.conftest import publish_catalog_task, publish_with_secrets


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def server(live_server, transactional_db, monkeypatch):
    """A live server, published tasks and an API client's token in the environment,
    as a pipeline would have them: the catalog's row-softmax (a GPU task: graded on
    this host under Triton's interpreter) and cpu-causal-softmax (timed by CPU time),
    with their real rubrics, and a made-up GPU task for the catalog filters.

    Gradings are not enqueued: these tests grade through the trusted store where
    they need grades. A Celery worker alive in the same test session would
    otherwise write to these submissions while the test's teardown truncates the
    tables, and PostgreSQL would break the deadlock by failing the teardown."""
    monkeypatch.setattr(submission_services, "enqueue_grading", lambda *args, **kwargs: None)
    monkeypatch.setattr(submission_services, "enqueue_grading_many", lambda ids: None)
    task = publish_catalog_task("row-softmax")
    cpu_task = publish_catalog_task("cpu-causal-softmax")
    author = factories.make_user(roles.AUTHOR)
    publish_with_secrets(author, slug="gemm-fp16", tags=["gemm"], hardware="h100")
    user = factories.make_user(roles.API_CLIENT, username="pipeline")
    _, token = account_services.token_create(user=user, name="ci", scopes=["read", "submit"])
    monkeypatch.setenv("BENCHWRIGHT_URL", live_server.url)
    monkeypatch.setenv("BENCHWRIGHT_TOKEN", token)
    return {
        "url": live_server.url,
        "token": token,
        "user": user,
        "task": task,
        "cpu_task": cpu_task,
    }


def run(*argv: str) -> tuple[int, str]:
    """``benchwright ARGV…`` in this process; returns (exit status, stdout)."""
    from client.cli import main

    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def lines_of(text: str) -> list[Any]:
    import json

    return [json.loads(line) for line in text.splitlines() if line.strip()]
