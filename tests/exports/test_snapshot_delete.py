"""Deleting a snapshot deletes its files in storage; a queued or running one cannot
be deleted, in the service or the admin."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from exports import services as export_services
from exports.models import Snapshot, SnapshotStatus
from tests.exports.conftest import build, define, snapshot_folder


def stored_files(settings) -> list[Path]:
    return [p for p in Path(settings.MEDIA_ROOT, "exports").rglob("*") if p.is_file()]


def test_deleting_a_snapshot_deletes_its_files_once_it_commits(
    world, settings, django_capture_on_commit_callbacks
):
    keep = build(define(world.owner, slug="kept", format="sft"), world.owner)
    gone = build(define(world.owner, slug="gone", format="sft"), world.owner)
    assert (snapshot_folder(gone) / "manifest.json").exists()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        export_services.snapshot_delete(snapshot_id=gone.pk)
    assert not Snapshot.objects.filter(pk=gone.pk).exists()
    assert (snapshot_folder(gone) / "manifest.json").exists(), "not before the commit"
    for callback in callbacks:
        callback()

    left = stored_files(settings)
    assert left and all(keep.storage_prefix in p.as_posix() for p in left)
    assert not Path(settings.MEDIA_ROOT, f"{gone.storage_prefix}.tar.gz").exists()
    assert Path(settings.MEDIA_ROOT, keep.archive_name).exists()


@pytest.mark.parametrize("status", [SnapshotStatus.QUEUED, SnapshotStatus.RUNNING])
def test_a_snapshot_not_yet_finished_is_not_deleted(world, status):
    snapshot = export_services.snapshot_create(
        definition=define(world.owner, format="sft"), user=world.owner
    )
    Snapshot.objects.filter(pk=snapshot.pk).update(status=status)

    with pytest.raises(export_services.SnapshotBusy, match=str(status)):
        export_services.snapshot_delete(snapshot_id=snapshot.pk)
    assert Snapshot.objects.filter(pk=snapshot.pk).exists()


def test_the_admin_deletes_a_snapshot_with_its_files_and_refuses_a_running_one(
    world, settings, client, django_user_model, django_capture_on_commit_callbacks
):
    client.force_login(django_user_model.objects.create_superuser("root-admin"))
    admin_client = client
    done = build(define(world.owner, slug="done", format="sft"), world.owner)
    running = export_services.snapshot_create(
        definition=define(world.owner, slug="running", format="sft"), user=world.owner
    )
    Snapshot.objects.filter(pk=running.pk).update(status=SnapshotStatus.RUNNING)

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:exports_snapshot_delete", args=[done.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert not Snapshot.objects.filter(pk=done.pk).exists()
    assert stored_files(settings) == []

    refused = admin_client.post(
        reverse("admin:exports_snapshot_delete", args=[running.pk]), {"post": "yes"}
    )
    assert refused.status_code == 403
    assert Snapshot.objects.filter(pk=running.pk).exists()

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:exports_snapshot_changelist"),
            {"action": "delete_selected", "_selected_action": [running.pk], "post": "yes"},
            follow=True,
        )
    assert Snapshot.objects.filter(pk=running.pk).exists()
