"""Authoring a debugging task in a real browser, validated by a real worker.

An author creates a debugging task and writes its codebase in the code editor
(the catalog's softmax task: the buggy source, a visible reproduction, hidden
tests, the expert fix and a wrong fix), sees it as a tree, marks its tests
FAIL_TO_PASS and PASS_TO_PASS in the grading tab, validates it through the real
Celery queue and bubblewrap sandbox, and reads every test's outcome in the
validation table. Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tasks.models import Task
from tests.browser.conftest import read_db
from tests.browser.test_authoring import create_draft, editor_in, log_in, type_code

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SOFTMAX = Path(__file__).resolve().parents[2] / "reference_solutions" / "debug-softmax-overflow"
GRADING = tomllib.loads((SOFTMAX / "task.toml").read_text())["grading"]
# (path, role, visibility, expected verdict) in the order the author adds them.
FILES = [
    ("repo/softmax.py", "starter", "prompt", ""),
    ("repo/tests/test_repro.py", "test", "prompt", ""),
    ("repo/tests/test_softmax_hidden.py", "test", "hidden", ""),
    ("fix.diff", "solution", "hidden", ""),
    ("bad/clamp.diff", "negative", "hidden", "wrong_answer"),
]


def add_file(page: Page, path: str, role: str, visibility: str, expected: str) -> None:
    page.get_by_role("link", name="New file").click()
    page.get_by_label("Path").fill(path)
    page.get_by_label("Role").select_option(role)
    page.get_by_label("Visibility").select_option(visibility)
    if expected:
        page.get_by_label("Expected verdict").select_option(expected)
    form = page.locator("form", has=page.get_by_label("Path"))
    type_code(page, editor_in(form), (SOFTMAX / path).read_text())
    page.get_by_role("button", name="Add file").click()
    expect(page.get_by_role("heading", name=path)).to_be_visible()


def test_author_writes_marks_tests_and_validates_a_debugging_task(
    live_server, people, celery_worker_process, page: Page, screenshots: Path
):
    base = live_server.url
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, base, "ada")

    create_draft(page, "softmax-overflow-draft", "Softmax overflows on large scores", "debugging")
    statement_form = page.locator("form.statement-form")
    type_code(page, editor_in(statement_form), (SOFTMAX / "statement.md").read_text())
    statement_form.get_by_role("button", name="Save statement").click()
    expect(page.get_by_text("Statement saved.")).to_be_visible()

    # The codebase, written in the code editor, shown as a tree.
    page.get_by_role("link", name="Files").click()
    for path, role, visibility, expected in FILES:
        add_file(page, path, role, visibility, expected)
    tree = page.locator(".file-tree")
    expect(tree.locator("[data-folder]")).to_have_text(["bad/", "repo/", "tests/"])
    expect(tree.locator("li.depth-2 .file-tree-path")).to_have_text(
        ["test_repro.py", "test_softmax_hidden.py"]
    )
    page.screenshot(path=screenshots / "debugging-files.png", full_page=True)

    # The grading tab lists every test; nothing marked yet is refused with the reason.
    page.get_by_role("link", name="Grading").click()
    tests = page.locator("table.test-groups tbody tr")
    expect(tests).to_have_count(len(GRADING["fail_to_pass"]) + len(GRADING["pass_to_pass"]))
    page.get_by_role("button", name="Save grading settings").click()
    expect(page.locator(".form-errors")).to_contain_text(
        "needs at least one test the fix must make pass"
    )
    for group in ("fail_to_pass", "pass_to_pass"):
        for test in GRADING[group]:
            page.get_by_label(f"Group of {test}", exact=True).select_option(group)
    page.get_by_label("Paths a fix may change").fill("softmax.py")
    page.screenshot(path=screenshots / "debugging-grading.png", full_page=True)
    page.get_by_role("button", name="Save grading settings").click()
    expect(page.get_by_text("Grading settings saved.")).to_be_visible()

    def saved() -> dict:
        return Task.objects.get(slug="softmax-overflow-draft").grading

    grading = read_db(saved)
    assert grading["fail_to_pass"] == GRADING["fail_to_pass"]
    assert grading["pass_to_pass"] == GRADING["pass_to_pass"]

    # Validation on the real worker: the expert fix, the wrong fix and the unchanged
    # source, each with its tests' counts and outcomes.
    page.get_by_role("link", name="Validation").click()
    page.get_by_role("button", name="Validate").click()
    run = page.locator("#validation-run")
    expect(run).to_have_attribute("data-status", "running")
    expect(run).to_have_attribute("data-status", re.compile("passed|failed"), timeout=600_000)
    expect(run.locator(".badge-run-passed")).to_be_visible()
    fix = run.locator("tbody > tr", has_text="fix.diff").first
    total = len(GRADING["fail_to_pass"])
    expect(fix.locator('[data-count="fail_to_pass"]')).to_have_text(f"{total} / {total}")
    baseline = run.locator("tbody > tr", has_text="(unchanged source)").first
    expect(baseline.locator('[data-count="fail_to_pass"]')).to_have_text(f"0 / {total}")
    expect(run.locator("tbody > tr", has_text="bad/clamp.diff").first).to_contain_text(
        "wrong_answer"
    )
    tests_of_fix = run.locator('tr[data-tests-of="fix.diff"]')
    tests_of_fix.locator("summary").click()
    hidden = tests_of_fix.locator('tr[data-test="tests/test_softmax_hidden.py::test_huge_logits"]')
    expect(hidden).to_have_attribute("data-outcome", "passed")
    expect(hidden).to_contain_text("hidden")
    page.screenshot(path=screenshots / "debugging-validation.png", full_page=True)
    assert errors == []
