"""A profiling task's trace as a timeline in real Chromium: lanes for the CPU thread
and the GPU stream, zoom and pan, an event's arguments on click, and the events
an answer cites highlighted. The task is a catalog bundle imported as it is;
the cited ids are the expert answer's. A screenshot goes to
artifacts/screenshots/trace-timeline.png."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_authoring import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BUNDLE = Path(__file__).resolve().parents[2] / "reference_solutions" / "prof-host-sync"


@pytest.fixture
def published(people: tuple[Any, Any]) -> str:
    """Imported as manage.py import_tasks does (an admin publishes the catalog)."""
    from tests.api.conftest import publish_catalog_task

    return publish_catalog_task(BUNDLE.name).slug


def settled(page: Page, wanted: Callable[[float], bool], timeout_s: float = 10.0) -> float:
    """The window's width once it is what ``wanted`` says and has stopped changing (or
    the last one read when the time runs out): zooms animate, slowly on a busy
    machine."""
    deadline = time.monotonic() + timeout_s
    before, width = None, window(page)
    while not (wanted(width) and width == before) and time.monotonic() < deadline:
        page.wait_for_timeout(200)
        before, width = width, window(page)
    return width


def window(page: Page) -> float:
    """The width of the timeline's visible window, in trace microseconds."""
    return float(
        page.evaluate(
            "() => { const w = document.querySelector('[data-trace-timeline]').timeline"
            ".getWindow(); return w.end - w.start; }"
        )
    )


def test_an_author_reads_a_trace_and_the_cited_events(
    live_server, published: str, page: Page, screenshots: Path
):
    expert = json.loads((BUNDLE / "expert.json").read_text())
    base = live_server.url
    log_in(page, base, "ada")

    # From the task page: each trace opens as a timeline.
    page.goto(f"{base}/tasks/{published}/")
    expect(page.locator("[data-binary-file]")).to_contain_text("gzip data")
    page.locator("[data-timeline-link]").click()
    timeline = page.locator("[data-trace-timeline]")
    expect(timeline).to_have_attribute("data-ready", "true")
    labels = page.locator(".vis-labelset .vis-label")
    expect(labels).to_have_count(2)
    expect(labels.nth(1)).to_contain_text("GPU 0 stream 7")
    assert page.locator(".vis-item.ev-kernel").count() > 10, "kernels on the GPU lane"
    assert page.locator(".vis-item.ev-cited").count() == 0, "nothing cited without an answer"

    # With the expert answer's evidence: the cited syncs stand out.
    query = urlencode({"file": "traces/rank0.json.gz", "cite": ",".join(expert["evidence"])})
    page.goto(f"{base}/tasks/{published}/timeline/?{query}")
    expect(timeline).to_have_attribute("data-ready", "true")
    expect(page.locator("[data-cited]")).to_contain_text(
        f"cites {len(expert['evidence'])} ids; {len(expert['evidence'])} events"
    )

    # Zoom in with the button and out with Ctrl + wheel; pan by dragging.
    whole = window(page)
    page.locator("[data-zoom-in]").click()
    zoomed = settled(page, lambda width: width < whole * 0.75)  # the zoom animates
    assert zoomed < whole * 0.75, (zoomed, whole)
    box = timeline.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, 400)
    page.keyboard.up("Control")
    assert settled(page, lambda width: width > zoomed) > zoomed

    # A cited event, focused from its chip, shows its arguments.
    first = expert["evidence"][0].removeprefix("ev:")
    page.locator(f"[data-focus-event='{first}']").click()
    args = page.locator("[data-event-args]")
    expect(args).to_have_attribute("data-shown-event", first)
    expect(args).to_contain_text("cudaStreamSynchronize")
    expect(args).to_contain_text("cited by the answer")
    cited = page.locator(".vis-item.ev-cited")
    expect(cited.first).to_be_visible()

    # Clicking an event on the lanes selects it too.
    kernel = page.locator(".vis-item.ev-kernel").first
    page.locator("[data-fit]").click()
    page.wait_for_timeout(700)
    kernel.click(force=True)
    expect(args).not_to_have_attribute("data-shown-event", first)
    expect(args).to_contain_text("correlation")
    page.screenshot(path=screenshots / "trace-timeline.png", full_page=True)
