"""Who may see, edit, build and download exports, in the browser and through the
API: the owner (an exporter), a colleague (another exporter), an outsider (no
exporter), an admin, an anonymous visitor, and tokens with and without the
``export`` scope."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from accounts import services as account_services
from exports.models import Snapshot
from tests.exports.conftest import build, define, exporter


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def owned(world):
    """The owner's definition with one built snapshot."""
    definition = define(world.owner, slug="owned", format="sft")
    return definition, build(definition, world.owner)


@pytest.fixture
def people(world, outsider, admin_user):
    return {
        "owner": world.owner,
        "colleague": exporter("colleague"),
        "outsider": outsider,
        "admin": admin_user,
        "anonymous": None,
    }


def browser(client, user):
    if user is not None:
        client.force_login(user)
    return client


def api(user=None, scopes=None):
    client = APIClient()
    if scopes is not None:
        _, token = account_services.token_create(user=user, name="t", scopes=scopes)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    elif user is not None:
        client.force_login(user)
    return client


PAGE_STATUS = {"owner": 200, "colleague": 404, "outsider": 403, "admin": 200, "anonymous": 302}


@pytest.mark.parametrize("who", list(PAGE_STATUS))
def test_definition_page_snapshot_page_and_download_follow_the_rules(client, people, owned, who):
    definition, snapshot = owned
    client = browser(client, people[who])

    pages = [
        reverse("export-detail", args=[definition.slug]),
        reverse("export-snapshot", args=[snapshot.pk]),
        reverse("export-download", args=[snapshot.pk]),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == PAGE_STATUS[who], (who, url)
    if PAGE_STATUS[who] == 200:
        download = client.get(pages[2])
        assert download["Content-Type"] == "application/gzip"
        assert b"".join(download.streaming_content)[:2] == b"\x1f\x8b"
    if who == "anonymous":
        assert client.get(pages[0])["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(
    ("who", "status", "sees"),
    [
        ("owner", 200, True),
        ("colleague", 200, False),
        ("outsider", 403, False),
        ("admin", 200, True),
        ("anonymous", 302, False),
    ],
)
def test_the_list_shows_a_definition_to_its_owner_and_admins_only(
    client, people, owned, who, status, sees
):
    response = browser(client, people[who]).get(reverse("export-list"))

    assert response.status_code == status
    assert (b"owned" in response.content) is sees


def test_the_nav_links_to_exports_for_exporters_only(client, people):
    for who, shown in (("owner", True), ("outsider", False), ("admin", True)):
        client.force_login(people[who])
        page = client.get(reverse("task-list")).content
        assert (reverse("export-list").encode() in page) is shown, who


@pytest.mark.parametrize(("who", "status"), [("owner", 302), ("colleague", 404), ("admin", 302)])
def test_editing_in_the_browser_is_for_the_owner_and_admins(client, people, owned, who, status):
    definition, _ = owned
    form = {
        "title": "Edited",
        "format": "sft",
        "train": "0.5",
        "validation": "0.25",
        "test": "0.25",
        "seed": "11",
        "margin": "0.2",
        "pairs_per_submission": "2",
    }

    response = browser(client, people[who]).post(
        reverse("export-edit", args=[definition.slug]), form
    )

    assert response.status_code == status
    definition.refresh_from_db()
    assert (definition.current_version.number == 2) is (status == 302)


@pytest.mark.parametrize(("who", "status"), [("owner", 302), ("colleague", 404), ("outsider", 403)])
def test_building_in_the_browser_is_for_those_who_see_the_definition(
    client, people, owned, who, status
):
    definition, _ = owned
    before = Snapshot.objects.count()

    response = browser(client, people[who]).post(reverse("export-start", args=[definition.slug]))

    assert response.status_code == status
    assert Snapshot.objects.count() == before + (status == 302)


def test_a_snapshot_with_identities_is_for_admins_only(client, people, world):
    definition = define(world.owner, slug="who", format="sft", include_submitter=True)
    snapshot = build(definition, people["admin"])

    assert snapshot.includes_submitter
    owner = browser(client, people["owner"])
    assert owner.get(reverse("export-download", args=[snapshot.pk])).status_code == 404
    assert owner.get(reverse("export-snapshot", args=[snapshot.pk])).status_code == 404
    assert api(people["owner"]).get(f"/api/v1/exports/snapshots/{snapshot.pk}/").status_code == 404
    client.force_login(people["admin"])
    assert client.get(reverse("export-download", args=[snapshot.pk])).status_code == 200


def test_creating_in_the_browser_freezes_version_one(client, people):
    client.force_login(people["owner"])
    form = {
        "slug": "from-form",
        "title": "From the form",
        "format": "preference",
        "kinds": ["kernel"],
        "tags": "relu, even",
        "train": "0.8",
        "validation": "0.1",
        "test": "0.1",
        "seed": "3",
        "margin": "0.3",
        "pairs_per_submission": "1",
    }

    response = client.post(reverse("export-create"), form)

    assert response.status_code == 302
    version = people["owner"].export_definitions.get(slug="from-form").current_version
    assert version.format == "preference"
    assert version.filters == {"kinds": ["kernel"], "tags": ["even", "relu"]}
    assert version.options["margin"] == 0.3
    bad = client.post(reverse("export-create"), form | {"slug": "other", "test": "0.5"})
    assert bad.status_code == 200 and b"add up to 1" in bad.content


# The API ---------------------------------------------------------------------------------------


def test_api_without_credentials_is_401(owned):
    definition, snapshot = owned
    for url in (
        "/api/v1/exports/definitions/",
        f"/api/v1/exports/definitions/{definition.slug}/",
        f"/api/v1/exports/snapshots/{snapshot.pk}/download/",
    ):
        assert APIClient().get(url).status_code == 401


def test_api_token_needs_the_export_scope(people, owned):
    definition, snapshot = owned
    admin = people["admin"]
    with_scope = api(admin, ["read", "export"])
    without = api(admin, ["read"])
    exporter_read_only = api(people["owner"], ["read"])

    assert with_scope.get(f"/api/v1/exports/definitions/{definition.slug}/").status_code == 200
    download = with_scope.get(f"/api/v1/exports/snapshots/{snapshot.pk}/download/")
    assert download.status_code == 200
    assert download["X-Content-SHA256"] == snapshot.archive_sha256
    for client in (without, exporter_read_only):
        response = client.get(f"/api/v1/exports/definitions/{definition.slug}/")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "missing_scope"


@pytest.mark.parametrize(
    ("who", "detail", "listed"),
    [
        ("owner", 200, True),
        ("colleague", 404, False),
        ("outsider", 403, False),
        ("admin", 200, True),
    ],
)
def test_api_sessions_follow_the_same_rules(people, owned, who, detail, listed):
    definition, snapshot = owned
    client = api(people[who])

    assert client.get(f"/api/v1/exports/definitions/{definition.slug}/").status_code == detail
    assert client.get(f"/api/v1/exports/snapshots/{snapshot.pk}/download/").status_code == detail
    listing = client.get("/api/v1/exports/definitions/")
    if who == "outsider":
        assert listing.status_code == 403
    else:
        slugs = [d["slug"] for d in listing.json()["results"]]
        assert ("owned" in slugs) is listed


def test_api_defines_edits_and_builds(people, world):
    client = api(people["owner"])

    created = client.post(
        "/api/v1/exports/definitions/",
        {"slug": "via-api", "title": "Via the API", "format": "rl", "seed": 4},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["current_version"]["number"] == 1
    edited = client.put(
        "/api/v1/exports/definitions/via-api/",
        {"title": "Via the API", "format": "rl", "seed": 5, "filters": {"difficulties": ["easy"]}},
        format="json",
    )
    assert edited.status_code == 200
    assert [v["number"] for v in edited.json()["versions"]] == [2, 1]
    refused = client.put(
        "/api/v1/exports/definitions/via-api/",
        {"title": "x", "format": "rl", "split": {"train": 0.9, "validation": 0.2, "test": 0}},
        format="json",
    )
    assert refused.status_code == 400
    assert "split" in refused.json()["error"]["fields"]
    started = client.post("/api/v1/exports/definitions/via-api/snapshots/")
    assert started.status_code == 202
    body = started.json()
    assert (body["status"], body["version"], body["download_url"]) == ("queued", 2, None)
    not_built = client.get(f"/api/v1/exports/snapshots/{body['id']}/download/")
    assert not_built.status_code == 409
    colleague = api(people["colleague"])
    assert (
        colleague.put(
            "/api/v1/exports/definitions/via-api/", {"title": "x", "format": "rl"}, format="json"
        ).status_code
        == 404
    )
    assert colleague.post("/api/v1/exports/definitions/via-api/snapshots/").status_code == 404
