import time

import pytest
import redis
from django.core.cache import cache
from django.test import override_settings

from benchwright.settings import redis_for_test_worker
from submissions import services
from submissions.models import Submission
from tests import recorded
from tests.api.conftest import bearer, submission_body, token_for

pytestmark = pytest.mark.django_db

# The database below the suite's broker (14): its own in each test process.
REDIS_CACHE = redis_for_test_worker("redis://127.0.0.1:6379/14", offset=1)


def test_the_daily_submission_quota_counts_batches_and_answers_429(task, owner):
    client = bearer(token_for(owner, scopes=["read", "submit"], max_submissions_per_day=3))
    assert (
        client.post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        ).status_code
        == 201
    )

    batch = {"submissions": [submission_body("row-softmax") for _ in range(3)]}
    over = client.post("/api/v1/submissions/batch/", batch, format="json")

    assert over.status_code == 429
    assert over.json()["error"]["code"] == "quota_exceeded"
    assert "1 of 3" in over.json()["error"]["message"]
    retry_after = int(over["Retry-After"])
    assert 0 < retry_after <= 86400
    assert Submission.objects.count() == 1, "nothing of the refused batch was created"
    batch["submissions"] = batch["submissions"][:2]
    assert client.post("/api/v1/submissions/batch/", batch, format="json").status_code == 201
    assert (
        client.post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        ).status_code
        == 429
    )


def test_quotas_are_per_token(task, owner):
    spent = bearer(token_for(owner, scopes=["submit"], max_submissions_per_day=1))
    fresh = bearer(token_for(owner, scopes=["submit"], max_submissions_per_day=1))

    assert (
        spent.post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        ).status_code
        == 201
    )
    assert (
        spent.post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        ).status_code
        == 429
    )
    assert (
        fresh.post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        ).status_code
        == 201
    )


def grade(submission, name):
    """Grade the submission's next attempt with a recorded report, as a worker would."""
    assert services.submission_claim(submission_id=submission.pk)
    submission.refresh_from_db()
    report = recorded.report(name)
    services.grading_store(submission_id=submission.pk, attempt=submission.attempts, report=report)
    return report["duration_s"]


def test_the_sandbox_time_quota_counts_todays_grading_runs_of_the_token(task, owner):
    # Two real gradings of row-softmax: the first stays under the quota, both are over.
    first_s = recorded.report(recorded.INTERPRETER)["duration_s"]
    second_s = recorded.report("row-softmax-no-max-subtraction")["duration_s"]
    quota = int(first_s) + 1
    assert first_s + second_s > quota, "the recordings are too short for this test"
    token = token_for(owner, scopes=["read", "submit"], max_sandbox_seconds_per_day=quota)
    client = bearer(token)
    first = client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")
    submission = Submission.objects.get(pk=first.json()["id"])
    spent = grade(submission, recorded.INTERPRETER)
    assert spent < quota
    assert (
        client.post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        ).status_code
        == 201
    )
    cache.clear()  # the day's sandbox time is cached for 30 s
    services.submission_regrade(submission=submission)
    spent += grade(submission, "row-softmax-no-max-subtraction")
    assert spent > quota

    response = client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")

    assert response.status_code == 429
    assert "sandbox time" in response.json()["error"]["message"]
    usage = client.get("/api/v1/me/").json()["usage"]
    assert usage["sandbox_seconds_today"] == pytest.approx(spent, abs=0.05)


def test_an_idempotent_replay_does_not_count_against_the_quota(task, owner):
    client = bearer(token_for(owner, scopes=["submit"], max_submissions_per_day=1))
    body = submission_body("row-softmax")

    codes = [
        client.post(
            "/api/v1/submissions/", body, format="json", HTTP_IDEMPOTENCY_KEY="k"
        ).status_code
        for _ in range(3)
    ]

    assert codes == [201, 201, 201]
    assert Submission.objects.count() == 1


@pytest.fixture
def redis_cache():
    """Throttle counters in the real Redis, as in production."""
    server = redis.Redis.from_url(REDIS_CACHE)
    server.flushdb()
    caches = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_CACHE,
        }
    }
    with override_settings(CACHES=caches):
        yield server
    server.flushdb()


def test_the_write_rate_is_throttled_in_redis_with_retry_after(task, owner, redis_cache):
    client = bearer(token_for(owner))
    with override_settings(API_RATES={"read": "100/m", "write": "2/m", "anon": "10/m"}):
        codes = [
            client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")
            for _ in range(3)
        ]
        read = client.get("/api/v1/tasks/")

    assert [r.status_code for r in codes] == [201, 201, 429]
    assert codes[2].json()["error"]["code"] == "throttled"
    assert 1 <= int(codes[2]["Retry-After"]) <= 60
    assert read.status_code == 200, "reads have their own budget"
    assert any(b"throttle:write" in key for key in redis_cache.keys("*")), "counted in Redis"
    assert Submission.objects.count() == 2


def test_the_throttle_window_resets(task, owner):
    client = bearer(token_for(owner))
    cache.clear()
    with override_settings(API_RATES={"read": "1/s", "write": "1/s", "anon": "1/s"}):
        time.sleep(1 - time.time() % 1 + 0.02)  # start of a one-second window
        first, second = client.get("/api/v1/tasks/"), client.get("/api/v1/tasks/")
        time.sleep(1 - time.time() % 1 + 0.02)  # the next window
        third = client.get("/api/v1/tasks/")

    assert [first.status_code, second.status_code, third.status_code] == [200, 429, 200]


def test_anonymous_callers_are_throttled_by_address(client):
    with override_settings(API_RATES={"read": "100/m", "write": "100/m", "anon": "2/m"}):
        codes = [client.get("/api/v1/schema/").status_code for _ in range(3)]

    assert codes == [200, 200, 429]
