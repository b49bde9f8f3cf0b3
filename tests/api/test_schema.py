"""The OpenAPI schema, its docs page (assets served locally), and a bounded
schemathesis run against it: no server errors, no response that breaks the schema."""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from benchwright import roles
from submissions import services
from tests import factories, recorded
from tests.api.conftest import GRADED, publish_with_secrets, token_for

pytestmark = pytest.mark.django_db


def test_the_schema_is_openapi_3_and_lists_every_endpoint(client):
    response = client.get("/api/v1/schema/?format=json")

    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) >= {
        "/api/v1/tasks/",
        "/api/v1/tasks/{slug}/",
        "/api/v1/submissions/",
        "/api/v1/submissions/batch/",
        "/api/v1/submissions/{id}/",
        "/api/v1/submissions/{id}/cancel/",
        "/api/v1/submissions/{id}/regrade/",
        "/api/v1/tokens/",
        "/api/v1/webhooks/",
    }
    assert schema["components"]["securitySchemes"]["bearerToken"]["scheme"] == "bearer"


def test_the_docs_page_loads_its_assets_from_this_server_only(client):
    response = client.get("/api/v1/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "no asset from elsewhere"
    assets = re.findall(r"""(?:src|href)=["']([^"']+\.(?:js|css))["']""", html)
    assert assets, "the page names its scripts"
    for asset in assets:
        assert asset.startswith("/static/drf_spectacular_sidecar/"), asset
        assert client.get(asset).status_code == 200, asset


@pytest.fixture
def api_schema(db):
    """A world for the fuzzer to roam: an admin's token, a published task, a graded
    and a queued submission, with throttles out of the way."""
    with override_settings(API_RATES={"read": "100000/m", "write": "100000/m", "anon": None}):
        author = factories.make_user(roles.AUTHOR)
        task = publish_with_secrets(author, slug="row-softmax")
        admin = factories.make_user(roles.ADMIN, is_staff=True)
        version = task.current_version
        assert version is not None
        graded, _queued = (
            services.submission_create(
                version=version, submitter=admin, files={"a.py": ""}, model_name="m"
            )
            for _ in range(2)
        )
        assert services.submission_claim(submission_id=graded.pk)
        services.grading_store(submission_id=graded.pk, attempt=1, report=recorded.report(GRADED))
        from benchwright.wsgi import application

        # As Django's test client does: a request must not close the connection that
        # holds the test's transaction.
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application)
            schema.token = token_for(admin)  # type: ignore[attr-defined]
            yield schema
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)


EXAMPLES_PER_MODE = 15
# "Schema-valid data must be accepted" cannot hold for rules a schema cannot state
# (a task slug must name a published task, sizes are counted in UTF-8 bytes, '..'
# is refused in paths); every other check runs, server errors and response
# conformance included.
EXCLUDED = [positive_data_acceptance]
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


def test_the_api_honours_its_schema_under_generated_requests(api_schema):
    """Every operation, valid and invalid requests: no 5xx, every response (status,
    content type, headers, body) as the schema says, invalid input refused.
    Bounded: EXAMPLES_PER_MODE requests per operation and mode, no shrinking."""
    headers = {"Authorization": f"Bearer {api_schema.token}"}
    failures = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 19
    for operation in operations:
        for mode in MODES:

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_MODE,
                deadline=None,
                derandomize=True,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            def exercise(case):
                case.call_and_validate(headers=headers, excluded_checks=EXCLUDED)

            try:
                exercise()
            except Exception as exc:  # collect every operation's failure, not just the first
                failures.append(f"{mode.value} {operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n\n".join(failures)
