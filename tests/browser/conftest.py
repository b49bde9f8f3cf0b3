"""Real headless Chromium for UI tests, driven by Playwright's sync API.

Debian's Chromium is used (``/usr/bin/chromium``): ``playwright install`` would
download a browser build, which cannot be fetched here.

The browser lives for one test only. Playwright's sync API keeps an asyncio loop
running in the test's thread, and Django refuses ORM calls from a thread with a
running loop; a session-wide browser would leave that loop running under every
later test in the session. So data is created by fixtures that run before
``page``, and the loop is gone again before the database is flushed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from playwright.sync_api import Page, sync_playwright

CHROMIUM = os.environ.get("BENCHWRIGHT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",  # the tests run as root, where Chromium's own sandbox cannot start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}
SCREENSHOTS = Path(settings.BASE_DIR) / "artifacts" / "screenshots"


@pytest.fixture
def page(live_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Page]:
    """A fresh browser page; request it after the fixtures that write to the database."""
    # Covers ORM calls in the test body while the loop runs (the live server's own
    # thread has no loop); undone when the test ends.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


@pytest.fixture
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def read_db(query: Callable[[], Any]) -> Any:
    """Run ORM reads from a test body in a thread of their own. Playwright keeps an
    event loop running in the test's thread, where Django would open a second
    connection that outlives the test; this thread's connection is closed at once."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = query()
        except Exception as exc:  # re-raised in the test's thread
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def people(transactional_db) -> tuple[Any, Any]:
    """An author (ada) and a reviewer (rex), with the browser assets built."""
    from benchwright import roles
    from tests import factories

    build = Path(settings.BASE_DIR) / "frontend" / "static" / "frontend" / "build"
    assert (build / "editor.js").is_file(), "build the browser assets first: make npm-deps"
    author = factories.make_user(roles.AUTHOR, username="ada", first_name="Ada", last_name="Kern")
    reviewer = factories.make_user(roles.REVIEWER, username="rex")
    return author, reviewer
