"""Authoring a task in a real browser, graded by a real worker.

An author creates a tiny KernelBench task (ReLU on 64 elements, plain PyTorch on
the CPU), writes its statement, reference, solution and a negative example in the
code editor, builds a rubric, validates it through the real Celery queue and
bubblewrap sandbox, and sends it to review; a reviewer comments on a line and
approves it, which publishes version 1. Screenshots of each page go to
artifacts/screenshots/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, ViewportSize, expect

from tasks.models import Task, TaskStatus
from tests import factories
from tests.browser.conftest import read_db

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]

REFERENCE = factories.REFERENCE
SOLUTION = REFERENCE.replace("class Model(", "class ModelNew(")
NEGATIVE = SOLUTION.replace("return torch.relu(x)", "return x.clone()  # forgets the ReLU")
STATEMENT = "# ReLU\n\nApply **relu** to a `4 x 64` tensor.\n"
NARROW: ViewportSize = {"width": 800, "height": 900}
WIDE: ViewportSize = {"width": 1280, "height": 900}


def log_in(page: Page, base: str, username: str) -> None:
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Tasks")).to_be_visible()


def editor_in(form: Locator) -> Locator:
    return form.locator(".cm-content").first


def type_code(page: Page, editor: Locator, code: str, typed_line: str = "") -> None:
    """Replace the editor's text: most of it arrives as text input, one line key by key."""
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(code)
    if typed_line:
        page.keyboard.press("Control+End")
        page.keyboard.type(typed_line)


def add_file(page: Page, path: str, role: str, code: str, **extra: str) -> None:
    page.get_by_role("link", name="New file").click()
    page.get_by_label("Path").fill(path)
    page.get_by_label("Role").select_option(role)
    page.get_by_label("Visibility").select_option("hidden")
    if "expected_verdict" in extra:
        page.get_by_label("Expected verdict").select_option(extra["expected_verdict"])
    if "note" in extra:
        page.get_by_label("Note").fill(extra["note"])
    form = page.locator("form", has=page.get_by_label("Path"))
    type_code(page, editor_in(form), code, typed_line="\n# written in the browser\n")
    page.get_by_role("button", name="Add file").click()
    expect(page.get_by_role("heading", name=path)).to_be_visible()


def add_criterion(page: Page, key: str, title: str, points: str, kind: str, **extra: str) -> None:
    page.get_by_label("Id", exact=True).fill(key)
    page.get_by_label("Title").fill(title)
    page.get_by_label("Points").fill(points)
    page.get_by_label("Automatic rule" if kind == "automatic" else "Human judgement").check()
    if kind == "human":
        page.get_by_label("Levels").fill(extra["levels"])
    page.get_by_role("button", name="Add criterion").click()
    expect(page.locator(f"#criterion-{key}")).to_be_visible()


def create_draft(page: Page, slug: str, title: str, kind: str, tags: str = "") -> None:
    """A new CPU task of ``kind`` through the New task form."""
    page.get_by_role("link", name="New task").click()
    page.get_by_label("Slug").fill(slug)
    page.get_by_label("Title").fill(title)
    page.get_by_label("Kind").select_option(kind)
    page.get_by_label("Target hardware").select_option("cpu")
    if tags:
        page.get_by_label("Tags").fill(tags)
    page.get_by_role("button", name="Create draft").click()


def test_author_writes_validates_and_a_reviewer_publishes_a_kernel_task(
    live_server, people, celery_worker_process, page: Page, screenshots: Path
):
    base = live_server.url
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, base, "ada")

    create_draft(page, "relu-64", "ReLU on 64 elements", "kernel", tags="relu, pytorch")
    expect(page.locator(".editor-head h1")).to_have_text("ReLU on 64 elements")

    # The statement, with its live preview rendered by the server.
    statement_form = page.locator("form.statement-form")
    type_code(page, editor_in(statement_form), STATEMENT)
    expect(page.locator("#statement-preview strong")).to_have_text("relu")
    page.screenshot(path=screenshots / "editor-overview.png", full_page=True)
    statement_form.get_by_role("button", name="Save statement").click()
    expect(page.get_by_text("Statement saved.")).to_be_visible()

    # Grading settings: an error lands beside its field, then small timing settings.
    page.get_by_role("link", name="Grading").click()
    expect(page.locator(".grading-form .cm-editor")).to_have_count(2)  # shapes and limits
    page.get_by_label("Trials").fill("2")
    page.get_by_role("button", name="Save grading settings").click()
    expect(page.locator(".field-invalid").filter(has=page.get_by_label("Trials"))).to_contain_text(
        "must be between 5 and 1000"
    )
    page.get_by_label("Trials").fill("5")
    page.get_by_label("warmup", exact=True).fill("1")
    page.get_by_label("min_batches", exact=True).fill("3")
    page.get_by_label("max_batches", exact=True).fill("3")
    page.get_by_label("budget_s", exact=True).fill("2")
    page.screenshot(path=screenshots / "editor-grading.png", full_page=True)
    page.get_by_role("button", name="Save grading settings").click()
    expect(page.get_by_text("Grading settings saved.")).to_be_visible()

    # Files, written in the code editor.
    page.get_by_role("link", name="Files").click()
    add_file(page, "reference.py", "reference", REFERENCE)
    add_file(page, "solution.py", "solution", SOLUTION)
    add_file(
        page, "bad/identity.py", "negative", NEGATIVE,
        expected_verdict="wrong_answer", note="forgets the ReLU",
    )  # fmt: skip
    expect(page.locator(".cm-editor .cm-line").first).to_be_visible()
    page.screenshot(path=screenshots / "editor-file.png", full_page=True)
    page.set_viewport_size(NARROW)
    page.screenshot(path=screenshots / "editor-file-800.png", full_page=True)
    page.set_viewport_size(WIDE)

    # The rubric, with its total.
    page.get_by_role("link", name="Rubric").click()
    add_criterion(page, "correct", "Correct on every shape", "5", "automatic")
    add_criterion(
        page, "clarity", "Clarity", "2", "human",
        levels="0: Hard to follow\n1: Readable\n2: Clear at a glance",
    )  # fmt: skip
    expect(page.locator("#rubric-total")).to_have_text("7")
    page.locator("#criterion-clarity").get_by_role("button", name="Move clarity up").click()
    expect(page.locator("#rubric-panel tbody tr").first).to_have_id("criterion-clarity")
    page.screenshot(path=screenshots / "editor-rubric.png", full_page=True)

    # Validate: the real worker grades the solution and the negative; the page polls.
    send = page.get_by_role("button", name="Send to review")
    expect(send).to_be_disabled()
    expect(page.locator("#review-why")).to_contain_text("Validate the draft first")
    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#validation-run")).to_have_attribute("data-status", "running")
    expect(page.locator("#validation-run")).to_have_attribute(
        "data-status", re.compile("passed|failed"), timeout=900_000
    )
    run = page.locator("#validation-run")
    expect(run.locator(".badge-run-passed")).to_be_visible()
    expect(run.locator("tr", has_text="solution.py")).to_contain_text("accepted")
    expect(run.locator("tr", has_text="bad/identity.py")).to_contain_text("wrong_answer")
    expect(run.locator("canvas[data-chart-ready=true]")).to_be_visible()
    page.screenshot(path=screenshots / "validation.png", full_page=True)
    page.set_viewport_size(NARROW)
    page.screenshot(path=screenshots / "validation-800.png", full_page=True)
    page.set_viewport_size(WIDE)

    # The action bar was swapped in with the results: review may start.
    expect(send).to_be_enabled()
    send.click()
    expect(page.locator(".badge-large")).to_have_text("In review")
    page.get_by_role("button", name="Log out").click()

    # The reviewer comments on a line and approves.
    log_in(page, base, "rex")
    page.goto(f"{base}/tasks/relu-64/")
    page.get_by_role("link", name="Review", exact=True).click()
    expect(page.get_by_text("This is the task's first review")).to_be_visible()
    page.get_by_role("button", name="Comment on line 9 of solution.py").click()
    page.get_by_role("textbox", name="Comment on line 9 of solution.py").fill("Nice and small.")
    page.get_by_role("button", name="Add comment").click()
    expect(page.locator(".line-comment")).to_contain_text("Nice and small.")
    page.screenshot(path=screenshots / "review.png", full_page=True)
    page.get_by_label("Overall comment").fill("Clear task, correct validation.")
    page.get_by_role("button", name="Approve and publish").click()

    expect(page.get_by_text("Approved: published as version v1.")).to_be_visible()
    expect(page.locator(".badge-large")).to_have_text("Published")
    expect(page.get_by_text("Showing published version v1")).to_be_visible()
    page.screenshot(path=screenshots / "task-published.png", full_page=True)

    def published() -> tuple[str, dict[str, str]]:
        task = Task.objects.get(slug="relu-64")
        version = task.current_version
        return task.status, {f.path: f.content for f in version.files.all()} if version else {}

    status, files = read_db(published)
    assert status == TaskStatus.PUBLISHED and files
    assert files["solution.py"].endswith("# written in the browser\n")
    assert files["statement.md"] == STATEMENT

    page.goto(f"{base}/dashboard/")
    expect(page.locator("canvas[data-chart-ready=true]")).to_be_visible()
    page.screenshot(path=screenshots / "dashboard.png", full_page=True)
    page.goto(f"{base}/tasks/relu-64/history/?old=draft&new=1")
    page.screenshot(path=screenshots / "history.png", full_page=True)
    assert errors == []


@pytest.fixture
def revised_task(people):
    """Version 1 published; revised, sent back with a line comment, then edited."""
    from tasks import services
    from tasks.models import FileRole, TaskFile

    author, reviewer = people
    task = factories.make_task(author, slug="row-relu", title="Row ReLU")
    TaskFile.objects.create(task=task, path="solution.py", content=SOLUTION, role=FileRole.SOLUTION)

    def submit() -> None:
        task.refresh_from_db()
        factories.mark_validated(task)
        services.task_submit_for_review(task=task, user=author)
        task.refresh_from_db()

    submit()
    services.task_review_decide(task=task, reviewer=reviewer, decision="approved")
    services.task_revise(task=task, user=author)
    submit()
    services.task_review_comment_add(
        task=task, reviewer=reviewer, path="solution.py", line=10, body="Use an in-place ReLU?"
    )
    services.task_review_decide(
        task=task, reviewer=reviewer, decision="changes_requested", comment="One small thing."
    )
    task.refresh_from_db()
    file = task.files.get(path="solution.py")
    services.task_file_save(
        task=task, user=author, file=file, visibility="hidden", role="solution",
        content=file.content.replace("torch.relu(x)", "torch.relu_(x.clone())"),
    )  # fmt: skip
    factories.mark_validated(task)
    return task


def test_the_author_reads_the_feedback_and_the_reviewer_sees_what_changed(
    live_server, revised_task, page: Page, screenshots: Path
):
    base = live_server.url
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, base, "ada")
    page.goto(f"{base}/tasks/row-relu/edit/")
    feedback = page.locator(".feedback")
    expect(feedback).to_contain_text("One small thing.")
    expect(feedback).to_contain_text("solution.py:10")
    expect(feedback).to_contain_text("Use an in-place ReLU?")
    page.screenshot(path=screenshots / "editor-feedback.png", full_page=True)
    page.get_by_role("button", name="Send to review").click()
    expect(page.locator(".badge-large")).to_have_text("In review")
    page.get_by_role("button", name="Log out").click()

    log_in(page, base, "rex")
    page.goto(f"{base}/tasks/row-relu/review/")
    changes = page.locator("section", has=page.get_by_role("heading", name="Changes since"))
    expect(changes.locator("tr.diff-del")).to_contain_text("torch.relu(x)")
    expect(changes.locator("tr.diff-add")).to_contain_text("torch.relu_(x.clone())")
    page.screenshot(path=screenshots / "review-changes.png", full_page=True)

    # History: v1 against the draft, side by side; htmx swaps only the diff.
    page.goto(f"{base}/tasks/row-relu/history/")
    page.get_by_label("From").select_option("1")
    page.get_by_label("To").select_option("draft")
    page.get_by_label("View").select_option("split")
    expect(page).to_have_url(re.compile(r"mode=split"))
    diff = page.locator("#diff .diff-split")
    expect(diff.locator("td.diff-del").first).to_contain_text("torch.relu(x)")
    expect(diff.locator("td.diff-add").first).to_contain_text("torch.relu_(x.clone())")
    page.screenshot(path=screenshots / "history-split.png", full_page=True)

    page.set_viewport_size(NARROW)
    page.goto(f"{base}/dashboard/")
    expect(page.locator("canvas[data-chart-ready=true]")).to_be_visible()
    page.screenshot(path=screenshots / "dashboard-800.png", full_page=True)
    assert errors == []
