import pytest
from django.db import connection

from submissions.models import Submission
from tests.api.conftest import bearer, submission_body

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    ["/api/nothing", "/api/v1/nope/", "/api/v1/tasks", "/api/v2/tasks/", "/api/v1/submissions/-1/"],
)
def test_unknown_api_paths_are_json_404s(path, owner_token):
    for method in ("get", "post"):
        response = getattr(bearer(owner_token), method)(path)

        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] == "not_found"


def test_a_wrong_method_is_a_json_405(owner_token):
    response = bearer(owner_token).delete("/api/v1/tasks/")

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_body_that_is_not_json_is_a_json_415(task, owner_token):
    response = bearer(owner_token).post(
        "/api/v1/submissions/", "task=row-softmax", content_type="text/plain"
    )

    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_an_unexpected_failure_is_a_json_500_that_rolls_back(task, owner_token, monkeypatch):
    from submissions import services

    def fail_after_writing(**kwargs):
        Submission.objects.create(
            task_version=kwargs["version"], submitter=kwargs["submitter"], model_name="half"
        )
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "submission_create", fail_after_writing)
    client = bearer(owner_token)
    client.raise_request_exception = False

    response = client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")

    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "server_error",
            "message": "An internal error occurred; it has been logged.",
        }
    }
    assert "disk on fire" not in response.content.decode()
    assert not Submission.objects.exists(), "the half-done write was rolled back"
    assert connection.in_atomic_block  # the test's own transaction is still usable
