import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import IdempotencyRecord
from submissions import services as submission_services
from submissions.models import Submission
from tests.api.conftest import bearer, submission_body, token_for

pytestmark = pytest.mark.django_db


def post(client, body, key, url="/api/v1/submissions/"):
    return client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_a_retry_with_the_same_key_and_body_replays_the_response_and_creates_nothing(
    task, owner_token
):
    client = bearer(owner_token)
    body = submission_body("row-softmax")

    first = post(client, body, "key-1")
    again = post(client, body, "key-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Submission.objects.count() == 1


def test_a_replayed_batch_returns_the_same_ids(task, owner_token):
    client = bearer(owner_token)
    body = {"submissions": [submission_body("row-softmax") for _ in range(3)]}

    first = post(client, body, "batch-0", "/api/v1/submissions/batch/")
    again = post(client, body, "batch-0", "/api/v1/submissions/batch/")

    assert [s["id"] for s in again.json()["submissions"]] == [
        s["id"] for s in first.json()["submissions"]
    ]
    assert Submission.objects.count() == 3


def test_the_same_key_with_another_body_is_refused(task, owner_token):
    client = bearer(owner_token)
    post(client, submission_body("row-softmax"), "key-2")

    response = post(client, submission_body("row-softmax", model="other"), "key-2")

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_key_reused"
    assert "different request" in response.json()["error"]["message"]
    assert Submission.objects.count() == 1


def test_keys_are_per_user(task, owner_token, colleague):
    body = submission_body("row-softmax")

    post(bearer(owner_token), body, "shared-key")
    response = post(bearer(token_for(colleague)), body, "shared-key")

    assert response.status_code == 201
    assert Submission.objects.count() == 2


def test_a_key_expires_after_24_hours(task, owner_token):
    client = bearer(owner_token)
    body = submission_body("row-softmax")
    post(client, body, "old-key")
    IdempotencyRecord.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    response = post(client, body, "old-key")

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert Submission.objects.count() == 2
    assert IdempotencyRecord.objects.get().expires_at > timezone.now() + timedelta(hours=23)


def test_expired_keys_are_purged_and_live_ones_kept(task, owner_token):
    from accounts.services import idempotency_purge_expired

    client = bearer(owner_token)
    post(client, submission_body("row-softmax"), "old")
    post(client, submission_body("row-softmax"), "new")
    IdempotencyRecord.objects.filter(key="old").update(expires_at=timezone.now())

    assert idempotency_purge_expired() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]


def test_an_error_is_not_kept_so_a_corrected_retry_goes_through(task, owner_token):
    client = bearer(owner_token)

    bad = post(client, submission_body("row-softmax", model=""), "fix-me")
    good = post(client, submission_body("row-softmax"), "fix-me")

    assert bad.status_code == 400
    assert good.status_code == 201
    assert Submission.objects.count() == 1


@pytest.mark.parametrize("key", ["", "has space", "ü", "x" * 256])
def test_a_malformed_key_is_a_400(key, task, owner_token):
    response = post(bearer(owner_token), submission_body("row-softmax"), key)

    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]["fields"]


def test_a_token_created_with_a_key_is_not_replayed_with_its_secret(owner_token):
    client = bearer(owner_token)
    body = {"name": "ci", "scopes": ["read"]}

    first = post(client, body, "tok-1", "/api/v1/tokens/")
    again = post(client, body, "tok-1", "/api/v1/tokens/")

    assert first.status_code == 201
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "secret_already_shown"
    assert first.json()["token"] not in str(IdempotencyRecord.objects.values_list())


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_create_one_submission(task, owner_token, monkeypatch):
    # Committed for real, so no grading is enqueued: a session worker grading it
    # would write while the teardown truncates the tables.
    monkeypatch.setattr(submission_services, "enqueue_grading", lambda *args, **kwargs: None)
    body = submission_body("row-softmax")
    start = threading.Barrier(4)
    responses = []

    def send():
        try:
            start.wait()
            responses.append(post(bearer(owner_token), body, "race"))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert [r.status_code for r in responses] == [201] * 4
    assert len({r.json()["id"] for r in responses}) == 1
    assert Submission.objects.count() == 1
