import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from benchwright import roles
from tests.api.conftest import bearer, submission_body, token_for

pytestmark = pytest.mark.django_db


def test_a_new_token_is_shown_once_and_stored_only_as_its_hash(owner, owner_token):
    client = bearer(owner_token)

    created = client.post("/api/v1/tokens/", {"name": "ci", "scopes": ["read"]}, format="json")

    assert created.status_code == 201
    token = created.json()["token"]
    row = ApiToken.objects.get(pk=created.json()["id"])
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token.startswith(f"bw_{row.prefix}_") and len(token) > 50
    stored = [str(v) for v in ApiToken.objects.filter(pk=row.pk).values_list().get()]
    assert not any(token in value for value in stored)
    listed = client.get("/api/v1/tokens/")
    assert token not in listed.content.decode()
    assert client.get(f"/api/v1/tokens/{row.pk}/").json()["state"] == "active"
    assert bearer(token).get("/api/v1/tasks/").status_code == 200


def test_a_token_cannot_grant_more_scopes_or_a_longer_life_than_its_own(owner):
    until = timezone.now() + timedelta(days=2)
    client = bearer(token_for(owner, scopes=["read"], expires_at=until))

    wider = client.post("/api/v1/tokens/", {"name": "x", "scopes": ["submit"]}, format="json")
    longer = client.post(
        "/api/v1/tokens/",
        {"name": "x", "scopes": ["read"], "expires_at": (until + timedelta(days=30)).isoformat()},
        format="json",
    )

    assert wider.status_code == 403
    assert longer.status_code == 201
    assert ApiToken.objects.get(pk=longer.json()["id"]).expires_at == until


def test_roles_cap_scopes_at_creation_and_on_every_request(owner, task):
    session = APIClient()
    session.force_login(owner)
    refused = session.post("/api/v1/tokens/", {"name": "x", "scopes": ["review"]}, format="json")
    assert refused.status_code == 400
    assert "review" in refused.json()["error"]["message"]

    token = token_for(owner, scopes=["read", "submit"])
    owner.groups.remove(Group.objects.get(name=roles.API_CLIENT))
    response = bearer(token).post(
        "/api/v1/submissions/", submission_body("row-softmax"), format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "missing_scope"


def test_a_revoked_token_stops_working_at_once_and_stays_listed(owner, owner_token):
    victim = token_for(owner, scopes=["read"])
    victim_id = ApiToken.objects.get(prefix=victim[3:15]).pk
    assert bearer(victim).get("/api/v1/me/").status_code == 200

    assert bearer(owner_token).delete(f"/api/v1/tokens/{victim_id}/").status_code == 204

    response = bearer(victim).get("/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "token_revoked"
    listed = {
        t["id"]: t["state"] for t in bearer(owner_token).get("/api/v1/tokens/").json()["results"]
    }
    assert listed[victim_id] == "revoked"


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer bw_short", "Bearer bw_0123456789ab_wrong", "Bearer a b", "Bearer ünïcode"],
)
def test_malformed_or_unknown_tokens_are_401_never_anonymous(header, task):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    response = client.get("/api/v1/tasks/")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "token_invalid"


def test_the_browser_session_works_and_its_writes_need_the_csrf_token(owner, task):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)

    assert client.get("/api/v1/me/").json()["scopes"] == ["read", "submit"]
    response = client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]


def test_me_reports_scopes_and_quota_use(owner, task):
    token = token_for(owner, scopes=["read", "submit"])
    client = bearer(token)
    client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")

    me = client.get("/api/v1/me/").json()

    assert me["username"] == "owner"
    assert me["roles"] == ["api_client"]
    assert me["token"]["prefix"] == token[3:15]
    assert me["usage"]["submissions_today"] == 1


def test_the_command_prints_a_working_token_with_the_scopes_asked_for(owner, task):
    out, err = StringIO(), StringIO()

    call_command(
        "create_api_token",
        "owner",
        "--scopes",
        "read,submit",
        "--expires-in-days",
        "7",
        "--max-submissions-per-day",
        "50",
        stdout=out,
        stderr=err,
    )

    token = out.getvalue().strip()
    row = ApiToken.objects.get(prefix=token[3:15])
    assert row.scopes == ["read", "submit"]
    assert row.max_submissions_per_day == 50
    assert row.expires_at is not None and row.expires_at > timezone.now() + timedelta(days=6)
    assert "shown only now" in err.getvalue()
    assert bearer(token).get("/api/v1/tasks/").status_code == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nobody", "--scopes", "read"], "no user"),
        (["owner", "--scopes", "read", "fly"], "unknown scope"),
        (["owner", "--scopes", "review"], "do not allow"),
    ],
)
def test_the_command_refuses_unknown_users_and_scopes(owner, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("create_api_token", *args, stdout=StringIO(), stderr=StringIO())
    assert not ApiToken.objects.exists()


def test_an_expiry_in_the_past_is_refused_on_its_field(owner_token):
    past = (timezone.now() - timedelta(hours=1)).isoformat()

    response = bearer(owner_token).post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["read"], "expires_at": past}, format="json"
    )

    assert response.status_code == 400
    assert "past" in response.json()["error"]["fields"]["expires_at"][0]


def test_members_of_the_exporter_group_may_hold_the_export_scope(db):
    from accounts import scopes
    from benchwright import roles

    assert scopes.EXPORT in scopes.scopes_allowed(frozenset({roles.EXPORTER}))
    assert scopes.EXPORT not in scopes.scopes_allowed(frozenset({roles.AUTHOR, roles.REVIEWER}))
