import pytest

from submissions.jobs import ping_job


@pytest.mark.django_db(transaction=True)
def test_a_job_makes_the_round_trip_through_redis_and_a_real_worker(celery_worker_process):
    result = ping_job.delay("hello")

    assert result.get(timeout=30) == "pong:hello"
    assert celery_worker_process.poll() is None, "the worker process is still alive"
