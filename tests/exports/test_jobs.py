"""Builds run as Celery jobs with progress: a real worker on Redis builds what the
CLI asks for while the CLI shows progress and downloads the tar.gz; the page polls
the snapshot's progress with htmx; failed and abandoned builds are handled."""

from __future__ import annotations

import io
import tarfile
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts import services as account_services
from benchwright import roles
from exports import services
from exports.models import Snapshot, SnapshotStatus
from tests import factories
from tests.exports.conftest import SECRETS, build_world, define


@pytest.mark.slow
def test_the_cli_exports_through_the_worker_with_progress_and_a_download(
    live_server,
    transactional_db,
    celery_worker_process,
    shared_media,
    monkeypatch,
    tmp_path,
    capsys,
):
    from tests.client.conftest import run

    world = build_world(tasks=3)
    admin = factories.make_user(roles.ADMIN, username="export-admin")
    _, token = account_services.token_create(user=admin, name="cli", scopes=["export"])
    definition = define(world.owner, slug="via-cli", format="critique")
    monkeypatch.setenv("BENCHWRIGHT_URL", live_server.url)
    monkeypatch.setenv("BENCHWRIGHT_TOKEN", token)
    target = tmp_path / "dataset.tar.gz"

    code, out = run(
        "export", definition.slug, "-o", str(target), "--interval", "0.2", "--timeout", "120"
    )

    assert code == 0, capsys.readouterr().err
    snapshot = Snapshot.objects.get(version__definition=definition)
    assert snapshot.status == SnapshotStatus.SUCCEEDED
    assert snapshot.items_total == snapshot.items_done > 0
    assert snapshot.rows_written == sum(snapshot.manifest["rows"].values()) > 0
    assert f"{target}: snapshot {snapshot.pk}" in out
    assert "exporting" in capsys.readouterr().err  # the progress bar
    with tarfile.open(target, "r:gz") as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames()}
        data = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())  # type: ignore[union-attr]
    assert {"README.md", "manifest.json", "data/train.parquet", "data/train.jsonl"} <= names
    assert not any(secret.encode() in data for secret in SECRETS)


def test_the_cli_reports_an_unknown_definition(live_server, db, monkeypatch, capsys):
    from tests.client.conftest import run

    admin = factories.make_user(roles.ADMIN)
    _, token = account_services.token_create(user=admin, name="cli", scopes=["export"])
    monkeypatch.setenv("BENCHWRIGHT_URL", live_server.url)
    monkeypatch.setenv("BENCHWRIGHT_TOKEN", token)

    code, _ = run("export", "no-such-export", "--no-progress")

    assert code == 1
    assert "404" in capsys.readouterr().err


@pytest.fixture
def queued(db):
    world = build_world(tasks=2)
    definition = define(world.owner, slug="queued", format="sft")
    return world, services.snapshot_create(definition=definition, user=world.owner)


def test_the_snapshot_page_polls_until_the_build_is_done(client, queued):
    world, snapshot = queued
    client.force_login(world.owner)
    url = reverse("export-snapshot", args=[snapshot.pk])

    waiting = client.get(url, HTTP_HX_REQUEST="true")
    assert waiting.status_code == 200
    assert b'hx-trigger="every 1s"' in waiting.content
    assert b"<html" not in waiting.content, "a fragment, not a page"
    assert "HX-Request" in waiting["Vary"]

    assert services.snapshot_build(snapshot_id=snapshot.pk) == SnapshotStatus.SUCCEEDED
    done = client.get(url, HTTP_HX_REQUEST="true")
    assert b"hx-trigger" not in done.content
    assert reverse("export-download", args=[snapshot.pk]).encode() in done.content
    page = client.get(url)
    assert b"<html" in page.content and b"Download tar.gz" in page.content


def test_progress_is_written_while_building(queued, monkeypatch):
    _, snapshot = queued
    seen = []
    original = services._Progress.__call__

    def spy(self, done, total, rows):
        original(self, done, total, rows)
        seen.append(Snapshot.objects.values_list("items_done", "items_total").get(pk=snapshot.pk))

    monkeypatch.setattr(services, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(services._Progress, "__call__", spy)
    monkeypatch.setattr("exports.source.CHUNK", 2)

    services.snapshot_build(snapshot_id=snapshot.pk)

    totals = {total for _, total in seen}
    # Per task five accepted submissions not turned down by a review.
    assert len(totals) == 1 and totals.pop() == 10
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 10
    assert len(set(done)) > 3, "progress moves chunk by chunk"


def test_a_build_runs_once_even_if_its_job_is_delivered_twice(queued):
    _, snapshot = queued

    assert services.snapshot_build(snapshot_id=snapshot.pk) == SnapshotStatus.SUCCEEDED
    assert services.snapshot_build(snapshot_id=snapshot.pk) == "not claimed"
    snapshot.refresh_from_db()
    assert snapshot.attempts == 1


def test_an_abandoned_build_is_claimed_again_after_its_heartbeat_stops(queued):
    _, snapshot = queued
    assert services.snapshot_claim(snapshot_id=snapshot.pk)
    assert not services.snapshot_claim(snapshot_id=snapshot.pk), "still fresh"

    Snapshot.objects.filter(pk=snapshot.pk).update(
        updated_at=timezone.now() - services.STALE_AFTER - timedelta(seconds=1)
    )

    assert services.snapshot_claim(snapshot_id=snapshot.pk)
    snapshot.refresh_from_db()
    assert (snapshot.status, snapshot.attempts) == (SnapshotStatus.RUNNING, 2)


def test_a_build_taken_over_by_a_newer_attempt_records_nothing(queued, monkeypatch, settings):
    from pathlib import Path

    from exports.build import Builder

    _, snapshot = queued
    run = Builder.run

    def slow_run(self):
        result = run(self)
        # Meanwhile the build was presumed dead and another worker claimed it.
        Snapshot.objects.filter(pk=snapshot.pk).update(attempts=2)
        return result

    monkeypatch.setattr(Builder, "run", slow_run)

    assert services.snapshot_build(snapshot_id=snapshot.pk) == "aborted"
    snapshot.refresh_from_db()
    assert (snapshot.status, snapshot.attempts, snapshot.archive_name) == ("running", 2, "")
    assert not [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()]


def test_a_failed_build_says_why_and_leaves_no_files(queued, monkeypatch, settings):
    from pathlib import Path

    _, snapshot = queued
    store = services._store

    def full_disk_at_the_archive(name, path):
        if name.endswith(".tar.gz"):
            raise OSError("disk full")
        return store(name, path)

    monkeypatch.setattr(services, "_store", full_disk_at_the_archive)

    assert services.snapshot_build(snapshot_id=snapshot.pk) == SnapshotStatus.FAILED
    snapshot.refresh_from_db()
    assert snapshot.status == SnapshotStatus.FAILED
    assert snapshot.error == "OSError: disk full"
    assert snapshot.finished_at is not None
    files = [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()]
    assert files == [], "the data files stored before the failure are removed"


def test_the_download_of_a_build_streams_the_archive_from_storage(client, queued):
    world, snapshot = queued
    services.snapshot_build(snapshot_id=snapshot.pk)
    snapshot.refresh_from_db()
    client.force_login(world.owner)

    response = client.get(reverse("export-download", args=[snapshot.pk]))

    body = b"".join(response.streaming_content)
    assert response["Content-Disposition"].startswith("attachment")
    assert len(body) == snapshot.archive_bytes
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        assert f"snapshot-{snapshot.pk}/manifest.json" in tar.getnames()
