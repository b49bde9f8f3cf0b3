"""Every endpoint against every kind of caller: the status each gets, and that no
body ever carries hidden task content or another client's submissions."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import ApiToken
from submissions import services
from submissions.models import Submission, SubmissionStatus
from tests.api.conftest import SECRET, bearer, expired, revoked, submission_body, token_for
from webhooks import services as webhook_services

pytestmark = pytest.mark.django_db

ROLES = [
    "owner",
    "colleague",
    "outsider",
    "reviewer",
    "admin",
    "task_author",
    "anonymous",
    "no_scope",
    "read_only",
    "expired",
    "revoked",
]
UNAUTHENTICATED = {"anonymous": 401, "expired": 401, "revoked": 401}


@pytest.fixture
def world(task, owner, colleague, outsider, reviewer, admin, task_author, graded_submission):
    queued = services.submission_create(
        version=task.current_version, submitter=owner, files={"a.py": ""}, model_name="m"
    )
    endpoint, secret = webhook_services.endpoint_create(
        user=owner, url="http://127.0.0.1:9/hook", events=["submission.graded"]
    )
    users = {
        "owner": owner,
        "colleague": colleague,
        "outsider": outsider,
        "reviewer": reviewer,
        "admin": admin,
        "task_author": task_author,
    }
    tokens: dict[str, str | None] = {name: token_for(user) for name, user in users.items()}
    tokens |= {
        "anonymous": None,
        "no_scope": token_for(owner, scopes=[]),
        "read_only": token_for(owner, scopes=["read"]),
        "expired": expired(owner),
        "revoked": revoked(owner),
    }
    second_token = token_for(owner, scopes=["read"])
    return {
        "tokens": tokens,
        "graded": graded_submission.pk,
        "queued": queued.pk,
        "webhook": endpoint.pk,
        "webhook_secret": secret,
        "owner_token_id": ApiToken.objects.get(prefix=second_token[3:15]).pk,
    }


def expect(default: int, **by_role: int) -> dict[str, int]:
    codes = {role: default for role in ROLES} | {"no_scope": 403}
    return codes | UNAUTHENTICATED | by_role


READ_ALL = expect(200)
CREATE = expect(201, outsider=403, reviewer=403, read_only=403)
OWN_ONLY = expect(404, owner=200, read_only=200)
ENDPOINTS: list[tuple[str, str, Any, dict[str, int]]] = [
    ("get", "/api/v1/tasks/", None, READ_ALL),
    ("get", "/api/v1/tasks/row-softmax/", None, READ_ALL),
    ("post", "/api/v1/submissions/", submission_body("row-softmax"), CREATE),
    (
        "post",
        "/api/v1/submissions/batch/",
        {"submissions": [submission_body("row-softmax")]},
        CREATE,
    ),
    ("get", "/api/v1/submissions/", None, READ_ALL),
    ("get", "/api/v1/submissions/summary/", None, READ_ALL),
    (
        "get",
        "/api/v1/submissions/{graded}/",
        None,
        # Reviewers work blind, through the review queue: a submission's detail
        # (model, run, client) is not theirs to read.
        expect(404, owner=200, read_only=200, admin=200, task_author=200),
    ),
    (
        "post",
        "/api/v1/submissions/{queued}/cancel/",
        None,
        expect(
            404, owner=200, admin=200, outsider=403, reviewer=403, task_author=403, read_only=403
        ),
    ),
    (
        "post",
        "/api/v1/submissions/{graded}/regrade/",
        None,
        expect(403, admin=200, task_author=200),
    ),
    ("get", "/api/v1/tokens/", None, READ_ALL),
    ("post", "/api/v1/tokens/", {"name": "new", "scopes": ["read"]}, expect(201)),
    ("get", "/api/v1/tokens/{owner_token_id}/", None, OWN_ONLY),
    (
        "delete",
        "/api/v1/tokens/{owner_token_id}/",
        None,
        expect(404, owner=204, read_only=204, no_scope=204),
    ),
    ("get", "/api/v1/me/", None, expect(200, no_scope=200)),
    ("get", "/api/v1/webhooks/", None, READ_ALL),
    ("post", "/api/v1/webhooks/", {"url": "http://127.0.0.1:9/h"}, CREATE),
    ("get", "/api/v1/webhooks/{webhook}/", None, OWN_ONLY),
    ("get", "/api/v1/webhooks/{webhook}/deliveries/", None, OWN_ONLY),
    (
        "delete",
        "/api/v1/webhooks/{webhook}/",
        None,
        expect(404, owner=204, outsider=403, reviewer=403, read_only=403),
    ),
]


def check(world: dict[str, Any], method: str, url: str, body: Any, role: str, status: int) -> None:
    client = bearer(world["tokens"][role])
    response = getattr(client, method)(url.format(**world), body, format="json")

    assert response.status_code == status, response.content
    text = response.content.decode()
    assert SECRET not in text
    assert world["webhook_secret"] not in text
    if status >= 400:
        assert set(response.json()["error"]) >= {"code", "message"}
    if role in UNAUTHENTICATED:
        assert (
            response.json()["error"]["code"]
            == {
                "anonymous": "not_authenticated",
                "expired": "token_expired",
                "revoked": "token_revoked",
            }[role]
        )
        assert response["WWW-Authenticate"].startswith("Bearer")
    if role == "no_scope" and status == 403:
        assert response.json()["error"]["code"] in {"missing_scope", "permission_denied"}


@pytest.mark.parametrize(
    ("method", "url", "body", "codes"),
    [pytest.param(*endpoint, id=f"{endpoint[0]}-{endpoint[1]}") for endpoint in ENDPOINTS],
)
def test_every_endpoint_answers_every_caller_as_expected(world, method, url, body, codes):
    """One world per endpoint, every caller in turn; the submissions' statuses are
    put back before each, so one caller's cancel or regrade does not decide the next's."""
    failures = []
    for role in ROLES:
        Submission.objects.filter(pk=world["queued"]).update(status=SubmissionStatus.QUEUED)
        Submission.objects.filter(pk=world["graded"]).update(status=SubmissionStatus.GRADED)
        try:
            check(world, method, url, body, role, codes[role])
        except AssertionError as exc:
            failures.append(f"{role}: {exc}")
    assert not failures, "\n".join(failures)


SEES_EVERY_SUBMISSION = {"owner", "read_only", "admin", "task_author"}


@pytest.mark.parametrize("role", [r for r in ROLES if r not in UNAUTHENTICATED | {"no_scope": 0}])
def test_lists_show_a_caller_only_the_submissions_it_may_see(world, role):
    client = bearer(world["tokens"][role])

    listed = {s["id"] for s in client.get("/api/v1/submissions/").json()["results"]}
    total = client.get("/api/v1/submissions/summary/").json()["total"]

    owners = {world["graded"], world["queued"]}
    expected = owners if role in SEES_EVERY_SUBMISSION else set()
    assert listed == expected
    assert total == len(expected)


@pytest.mark.parametrize("role", ["colleague", "admin", "reviewer"])
def test_token_and_webhook_lists_never_show_another_users(world, role):
    client = bearer(world["tokens"][role])

    tokens = client.get("/api/v1/tokens/").json()["results"]
    webhooks = client.get("/api/v1/webhooks/").json()["results"]

    assert all(t["id"] != world["owner_token_id"] for t in tokens)
    assert len(tokens) == 1, "only the caller's own token"
    assert webhooks == []
