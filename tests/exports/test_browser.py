"""The snapshot page in real headless Chromium: it polls with htmx and shows the
build's progress, then the download, without a reload."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from exports import services
from tests.browser.conftest import page, screenshots  # noqa: F401 (fixtures)
from tests.exports.conftest import build_world, define

pytestmark = [pytest.mark.browser]


@pytest.fixture
def queued_build(transactional_db, client, monkeypatch):
    """A queued build and its owner's session cookie, made before the browser starts.

    The test runs the build itself (build_like_the_worker), at the moment it wants
    to watch it: a worker started by another test of the session must not take it."""
    from exports import jobs

    monkeypatch.setattr(jobs.build_snapshot_job, "apply_async", lambda *a, **k: None)
    world = build_world(tasks=2)
    definition = define(world.owner, slug="in-browser", format="sft")
    snapshot = services.snapshot_create(definition=definition, user=world.owner)
    client.force_login(world.owner)
    return snapshot, client.cookies["sessionid"].value


def build_like_the_worker(snapshot_id: int) -> None:
    """The job's service, in a thread of its own: the browser's event loop runs in
    the test's thread, and the build's connection is closed when it is done."""

    def work() -> None:
        try:
            services.snapshot_build(snapshot_id=snapshot_id)
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()


def test_the_snapshot_page_follows_the_build_until_the_download_appears(
    queued_build,
    live_server,
    page,  # noqa: F811
    screenshots,  # noqa: F811
):
    snapshot, session = queued_build
    page.context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])

    page.goto(f"{live_server.url}/exports/snapshots/{snapshot.pk}/")
    page.wait_for_selector("#snapshot-progress[data-status='queued']")
    assert "0 of 0 submissions read" in page.inner_text("#snapshot-progress")
    assert page.locator("a", has_text="Download tar.gz").count() == 0

    build_like_the_worker(snapshot.pk)

    page.wait_for_selector("#snapshot-progress[data-status='succeeded']", timeout=10_000)
    text = page.inner_text("#snapshot-progress")
    assert "10 of 10 submissions read, 8 rows written" in text
    assert page.locator("progress").get_attribute("value") == "100"
    link = page.locator("a", has_text="Download tar.gz")
    assert link.get_attribute("href") == f"/exports/snapshots/{snapshot.pk}/download/"
    page.screenshot(path=str(screenshots / "export-snapshot.png"), full_page=True)
    page.goto(f"{live_server.url}/exports/in-browser/")
    assert page.locator("nav.mainnav a", has_text="Exports").get_attribute("aria-current") == "page"
    page.screenshot(path=str(screenshots / "export-definition.png"), full_page=True)
    page.goto(f"{live_server.url}/exports/new/")
    assert page.locator("input[name=slug]").count() == 1
    page.screenshot(path=str(screenshots / "export-new.png"), full_page=True)
