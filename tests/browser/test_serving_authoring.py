"""Authoring a serving task in a real browser, its reference config checked by vLLM on
a real worker.

An author creates a serving task, sets its workload (shared-prefix traffic: the
prefix fields appear once that dataset is chosen), SLOs, rate search and the flags
solvers may set in the grading tab, then writes the reference config in the code
editor beside it: a flag the task does not allow is named at once and nothing is
saved; a config the platform passes but vLLM refuses is saved and vLLM's reason is
shown; a good one comes back with the engine settings vLLM resolved. vLLM's checks
run on the Celery worker, in the serving environment (.venv-serving). Screenshots
go to artifacts/screenshots/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tasks.models import Task
from tests.browser.conftest import read_db
from tests.browser.test_authoring import create_draft, editor_in, log_in, type_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "serve-prefix-draft"
REFERENCE = "reference/engine.toml"


def test_author_sets_a_serving_workload_and_vllm_checks_the_reference(
    live_server, people, celery_worker_process, page: Page, screenshots: Path
):
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server.url, "ada")
    create_draft(page, SLUG, "Serve traffic that shares a prompt", "serving")
    page.get_by_role("link", name="Grading").click()

    # The workload: the prefix fields are shown only for shared-prefix traffic.
    prefix = page.get_by_label("Shared prefix tokens")
    expect(prefix).to_be_hidden()
    page.get_by_label("Dataset").select_option("prefix")
    expect(prefix).to_be_visible()
    prefix.fill("512")
    page.get_by_label("Distinct prefixes").fill("2")
    page.get_by_label("Input tokens").fill("32")
    page.get_by_label("Output tokens").fill("16")
    page.get_by_label("Rate (requests/s)").fill("4")
    page.get_by_label("TTFT (ms)").fill("1000")
    page.get_by_label("TPOT (ms)").fill("200")
    page.get_by_label("Objective", exact=True).select_option("max_rate")
    page.get_by_label("Rates tried").fill("4, 8, 4")
    page.get_by_label("Flag 3", exact=True).fill("enable_prefix_caching")
    page.get_by_role("button", name="Save grading settings").click()
    # A ladder that is not increasing is named beside its field; nothing is saved.
    rates = page.locator(".field", has=page.get_by_label("Rates tried"))
    expect(rates.locator(".field-error")).to_contain_text("positive and increasing")
    page.get_by_label("Rates tried").fill("4, 8, 16")
    page.get_by_role("button", name="Save grading settings").click()
    expect(page.get_by_text("Grading settings saved.")).to_be_visible()

    def grading() -> dict:
        return Task.objects.get(slug=SLUG).grading

    saved = read_db(grading)
    assert saved["workload"]["dataset"] == "prefix"
    assert (saved["workload"]["prefix_len"], saved["workload"]["prefixes"]) == (512, 2)
    assert saved["objective"] == {"kind": "max_rate", "rates": [4, 8, 16]}
    assert saved["allowed"] == ["max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching"]

    # The reference config: the platform's gate answers at once, naming the flag.
    card = page.locator("#serving-reference")
    type_code(page, editor_in(card), "block_size = 16\nmax_num_seqs = 8\n")
    card.get_by_role("button", name="Save and check reference").click()
    expect(card.locator(".field-error")).to_contain_text(
        "--block-size: is not one this task lets you set"
    )
    expect(card.locator("#serving-check")).to_have_count(0)

    def reference() -> str | None:
        file = Task.objects.get(slug=SLUG).files.filter(path=REFERENCE).first()
        return file.content if file else None

    assert read_db(reference) is None

    # Through the gate but not through vLLM's own checks: saved, and vLLM's reason shown.
    card = page.locator("#serving-reference")
    type_code(page, editor_in(card), "max_num_seqs = 8\nmax_num_batched_tokens = 4\n")
    card.get_by_role("button", name="Save and check reference").click()
    check = page.locator("#serving-check")
    expect(check).to_have_attribute("data-state", "refused", timeout=180_000)
    expect(check).to_contain_text("--max-num-batched-tokens")
    expect(check).to_contain_text("must be greater than or equal to max_num_seqs")

    # A good config: vLLM resolves what it amounts to.
    good = "enable_prefix_caching = false\nmax_num_seqs = 8\n"
    card = page.locator("#serving-reference")
    type_code(page, editor_in(card), good)
    card.get_by_role("button", name="Save and check reference").click()
    check = page.locator("#serving-check")
    expect(check).to_have_attribute("data-state", "accepted", timeout=180_000)
    engine = check.locator("table.serving-engine")
    expect(engine.locator("tr", has_text="max_num_seqs")).to_contain_text("8")
    expect(engine.locator("tr", has_text="enable_prefix_caching")).to_contain_text("False")
    expect(engine.locator("tr", has_text="max_model_len")).to_contain_text("2048")
    assert read_db(reference) == good
    page.screenshot(path=screenshots / "serving-authoring.png", full_page=True)

    # The page reloaded shows the saved reference in the editor.
    page.reload()
    expect(page.locator("#serving-reference .cm-content")).to_contain_text("max_num_seqs = 8")
    assert errors == []
