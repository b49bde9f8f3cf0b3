"""One journey through the whole product, with its real parts and no shortcuts.

An author imports the catalog's row-softmax bundle in Chromium and validates it
through the real Celery worker and bubblewrap sandbox (a GPU task, checked on this
CPU host under Triton's interpreter); a reviewer publishes it. A pipeline submits
with the installed ``benchwright`` command: a verbatim copy of the hidden expert
solution, a copy of a hidden negative (a wrong answer), an empty file, and two
solutions written from the statement alone by two other models (the honest ones,
from tests/exports/corpus). The worker grades them; a reviewer reviews every
accepted one and judges a pair in the browser; the client reads its results in
the browser; an exporter builds an SFT and a preference snapshot in the browser,
downloads them, and ``datasets.load_dataset`` reads them offline: the honest
accepted solutions are there, the copies of hidden files and the failures are
not. Each step leaves a screenshot in artifacts/screenshots/journey-NN-*.png.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from playwright.sync_api import Page, expect

from accounts import services as account_services
from benchwright import roles
from exports import selectors as export_selectors
from reviews.models import PairOffer, PairwiseJudgement, ReviewAssignment, ReviewOutcome
from tasks.models import Task, TaskStatus
from tests import factories
from tests.browser.conftest import read_db

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(settings.BASE_DIR)
BUNDLE = ROOT / "reference_solutions" / "row-softmax"
HONEST = ROOT / "tests" / "exports" / "corpus" / "honest" / "row-softmax"
BUILD = ROOT / "frontend" / "static" / "frontend" / "build"
BENCHWRIGHT = Path(sys.executable).parent / "benchwright"
STATEMENT = (BUNDLE / "statement.md").read_text().splitlines()[0]
RUN = "journey-1"
# Validation grades four files one after another, on a 2-core host that the other test
# process keeps busy too.
GRADING_S = 900


class Album:
    """Screenshots numbered in the order the journey takes them."""

    def __init__(self, page: Page, folder: Path) -> None:
        self.page, self.folder, self.count = page, folder, 0
        for old in folder.glob("journey-*.png"):
            old.unlink()

    def shoot(self, step: str) -> None:
        self.count += 1
        path = self.folder / f"journey-{self.count:02d}-{step}.png"
        self.page.screenshot(path=str(path), full_page=True)


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Nothing from any hub: the data is local, and so is the cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


@pytest.fixture
def cast(transactional_db, tmp_path) -> dict[str, Any]:
    """The people of the journey, the pipeline's token and the files it will send;
    made before the browser starts (see tests/browser/conftest.py)."""
    assert (BUILD / "editor.js").is_file(), "build the browser assets first: make npm-deps"
    cache.clear()  # throttle counters of earlier tests
    factories.make_user(roles.AUTHOR, username="ada")
    factories.make_user(roles.REVIEWER, username="rex")
    client = factories.make_user(roles.API_CLIENT, username="pipeline")
    export_selectors.grant_exporter(factories.make_user(username="erin"))
    _, token = account_services.token_create(user=client, name="ci", scopes=["read", "submit"])
    return {"token": token, "bundle": bundle_zip(tmp_path), "files": solutions(tmp_path)}


def bundle_zip(tmp_path: Path) -> Path:
    """The catalog folder as an author would zip it: one top folder."""
    path = tmp_path / "row-softmax.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(BUNDLE.rglob("*")):
            if file.is_file():
                archive.write(file, f"row-softmax/{file.relative_to(BUNDLE)}")
    return path


def solutions(tmp_path: Path) -> dict[str, Path]:
    """Each submission as a solution.py of its own folder (the CLI sends a file under
    its base name)."""
    texts = {
        "catalog": (BUNDLE / "solution.py").read_text(),
        "wrong": (BUNDLE / "bad" / "no_max_subtraction.py").read_text(),
        "empty": "",
        "honest-a": (HONEST / "registers_or_loop.py").read_text(),
        "honest-b": (HONEST / "online_two_sweeps.py").read_text(),
    }
    paths = {}
    for name, text in texts.items():
        folder = tmp_path / "submit" / name
        folder.mkdir(parents=True)
        paths[name] = folder / "solution.py"
        paths[name].write_text(text, encoding="utf-8")
    return paths


# Browser helpers -------------------------------------------------------------------------------


def log_in(page: Page, base: str, username: str, then: str) -> None:
    page.goto(f"{base}/login/?next={then}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base}{then}")
    page.wait_for_load_state("load")


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Username")).to_be_visible()


# The CLI ---------------------------------------------------------------------------------------


class Cli:
    """The installed ``benchwright`` command against the live server, as a pipeline
    runs it; keeps a transcript."""

    def __init__(self, url: str, token: str, cwd: Path) -> None:
        self.env = dict(os.environ, BENCHWRIGHT_URL=url, BENCHWRIGHT_TOKEN=token)
        self.cwd = cwd
        self.transcript: list[str] = []

    def __call__(self, *argv: str, timeout: float = 60) -> str:
        done = subprocess.run(
            [str(BENCHWRIGHT), *argv],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        self.transcript.append(f"$ benchwright {' '.join(argv)}\n{done.stdout}")
        assert done.returncode == 0, done.stderr
        return done.stdout

    def submit(self, file: Path, model: str) -> int:
        out = self(
            "submit",
            "--task",
            "row-softmax",
            "--model",
            model,
            "--run-id",
            RUN,
            str(file.relative_to(self.cwd)),
        )
        found = re.fullmatch(r"submission (\d+) queued\n", out)
        assert found, out
        return int(found[1])

    def screen(self) -> str:
        """The transcript as a page to photograph."""
        text = html.escape("".join(self.transcript))
        return f"<pre style='white-space: pre-wrap; font-size: 12px; margin: 16px'>{text}</pre>"


# Reviews ---------------------------------------------------------------------------------------

# Levels per human criterion. The two honest solutions get the same ones, so theirs
# are the closest scores and the pair offered for judgement is theirs.
HONEST_LEVELS = {"clarity": "1", "numerical-care": "2", "explanation": "0"}
EXPERT_LEVELS = {"clarity": "2", "numerical-care": "3", "explanation": "2"}


def review_next(page: Page, base: str, ids: dict[str, int], album: Album) -> str:
    """Claim the next item, fill the rubric, accept it; returns which submission it was."""
    page.goto(f"{base}/review/")
    page.get_by_role("button", name="Review the next item").click()
    expect(page).to_have_url(re.compile(r"/review/items/\d+/$"))
    assignment = int(page.url.rstrip("/").rsplit("/", 1)[1])
    submission = read_db(lambda: ReviewAssignment.objects.get(pk=assignment).submission_id)
    name = next(k for k, v in ids.items() if v == submission)
    body = page.locator("body").inner_text()
    assert "pipeline" not in body and "model-" not in body, "reviews are blind"
    levels = EXPERT_LEVELS if name == "catalog" else HONEST_LEVELS
    for key, score in levels.items():
        page.locator(f'fieldset[data-criterion="{key}"] input[value="{score}"]').check()
    page.get_by_placeholder("What works").fill("Correct on every shape; numerically careful.")
    page.locator('input[data-decision="accept"]').check()
    album.shoot(f"review-{name}")
    page.get_by_role("button", name="Submit review").click()
    expect(page.locator("[data-state=submitted]")).to_be_visible()
    return name


def judge_pair(page: Page, base: str, ids: dict[str, int], album: Album) -> None:
    """The reviewer judges the offered pair, shown blind in random order: honest-a
    is better overall and on clarity, a tie on the rest."""
    page.goto(f"{base}/review/pairs/")
    expect(page).to_have_url(re.compile(r"/review/pairs/[0-9a-f-]{36}/$"))
    offer_id = page.url.rstrip("/").rsplit("/", 1)[1]
    a, b = read_db(
        lambda: PairOffer.objects.values_list("submission_a_id", "submission_b_id").get(pk=offer_id)
    )
    assert {a, b} == {ids["honest-a"], ids["honest-b"]}, "the closest scores make the pair"
    winner = "a" if a == ids["honest-a"] else "b"
    form = page.locator("#pair-form")
    form.locator(f'fieldset[data-criterion="overall"] input[value="{winner}"]').check()
    form.locator(f'fieldset[data-criterion="clarity"] input[value="{winner}"]').check()
    form.locator('fieldset[data-criterion="numerical-care"] input[value="tie"]').check()
    form.locator('fieldset[data-criterion="explanation"] input[value="tie"]').check()
    form.get_by_label("Why").fill("One kernel per path reads more plainly than two sweeps.")
    expect(page.locator("[data-side=a] .code-lines")).to_be_visible()
    album.shoot("pair")
    form.get_by_role("button", name="Submit judgement").click()
    expect(page.get_by_text("Judgement recorded.")).to_be_visible()
    album.shoot("pair-judged")


# Exports ---------------------------------------------------------------------------------------


def build_export(page: Page, base: str, album: Album, *, slug: str, fmt: str, into: Path) -> Path:
    """Define an export of row-softmax, build a snapshot with the real worker, and
    download its tar.gz as the browser does."""
    page.goto(f"{base}/exports/new/")
    page.get_by_label("Name").fill(slug)
    page.get_by_label("Title").fill(f"Row softmax, {fmt}")
    page.get_by_label("Format").select_option(fmt)
    page.get_by_label("Task slugs").fill("row-softmax")
    album.shoot(f"export-{fmt}-define")
    page.get_by_role("button", name="Define export").click()
    expect(page).to_have_url(f"{base}/exports/{slug}/")
    page.get_by_role("button", name="Build snapshot").click()
    expect(page).to_have_url(re.compile(r"/exports/snapshots/\d+/$"))
    expect(page.locator("#snapshot-progress")).to_have_attribute(
        "data-status", re.compile("succeeded|failed"), timeout=120_000
    )
    expect(page.locator("#snapshot-progress")).to_have_attribute("data-status", "succeeded")
    page.locator("details.left-out-reason").evaluate_all("els => els.forEach(e => e.open = true)")
    album.shoot(f"export-{fmt}-built")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download tar.gz").click()
    archive = into / f"{slug}.tar.gz"
    download.value.save_as(archive)
    return archive


def load(archive: Path, into: Path) -> list[dict[str, Any]]:
    """Extract the tar.gz and read it with ``datasets``, through the card's configs:
    every split's rows."""
    import datasets

    with tarfile.open(archive, mode="r:gz") as tar:
        tar.extractall(into, filter="data")
        (top,) = {name.split("/", 1)[0] for name in tar.getnames()}
    loaded = datasets.load_dataset(str(into / top), cache_dir=str(into / "cache"))
    return [row for split in loaded.values() for row in split.to_list()]


def left_out(page: Page) -> dict[str, str]:
    """The snapshot page's reasons for leaving rows out, with their summaries."""
    groups = page.locator("details.left-out-reason").all()
    return {g.get_attribute("data-reason") or "": g.locator("summary").inner_text() for g in groups}


# The journey -----------------------------------------------------------------------------------


def test_from_catalog_bundle_to_a_loaded_dataset(
    cast, offline, celery_worker_process, live_server, tmp_path, page: Page, screenshots: Path
):
    base = live_server.url
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    album = Album(page, screenshots)

    # The author imports the catalog bundle as a draft and validates it on the worker.
    log_in(page, base, "ada", "/import-bundle/")
    page.get_by_label("Bundle (.zip)").set_input_files(cast["bundle"])
    album.shoot("author-import")
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page).to_have_url(f"{base}/tasks/row-softmax/edit/")
    expect(page.get_by_text("Imported row-softmax")).to_be_visible()
    album.shoot("author-imported")
    page.get_by_role("button", name="Validate", exact=True).click()
    run = page.locator("#validation-run")
    expect(run).to_have_attribute(
        "data-status", re.compile("passed|failed"), timeout=GRADING_S * 1000
    )
    album.shoot("validation")
    expect(run.locator(".badge-run-passed")).to_be_visible()
    expect(run.locator("tr", has_text="solution.py").first).to_contain_text("accepted")
    expect(run.locator("tr", has_text="bad/no_max_subtraction.py")).to_contain_text("wrong_answer")
    expect(run.locator("tr", has_text="bad/patched_clock.py")).to_contain_text(
        "integrity_violation"
    )
    page.get_by_role("button", name="Send to review").click()
    expect(page.locator(".badge-large")).to_have_text("In review")
    log_out(page)

    # A reviewer approves it: version 1 is published.
    log_in(page, base, "rex", "/tasks/row-softmax/review/")
    page.get_by_label("Overall comment").fill("Validated on the CPU host; ready for solvers.")
    album.shoot("task-review")
    page.get_by_role("button", name="Approve and publish").click()
    expect(page.get_by_text("Approved: published as version v1.")).to_be_visible()
    album.shoot("task-published")
    status = read_db(lambda: Task.objects.get(slug="row-softmax").status)
    assert status == TaskStatus.PUBLISHED

    # The pipeline submits with the CLI and waits for the real worker to grade.
    cli = Cli(base, cast["token"], cwd=tmp_path / "submit")
    files = cast["files"]
    ids = {
        "catalog": cli.submit(files["catalog"], "model-a"),
        "wrong": cli.submit(files["wrong"], "model-a"),
        "empty": cli.submit(files["empty"], "model-a"),
        "honest-a": cli.submit(files["honest-a"], "model-b"),
        "honest-b": cli.submit(files["honest-b"], "model-c"),
    }
    summary = cli(
        "wait", RUN, "--interval", "1", "--timeout", str(GRADING_S), "--no-progress",
        timeout=GRADING_S + 30,
    )  # fmt: skip
    assert summary.startswith(f"run {RUN}: 5 finished"), summary
    results = {row["id"]: row for row in map(json.loads, cli("results", RUN).splitlines())}
    verdicts = {name: results[pk]["verdict"] for name, pk in ids.items()}
    assert verdicts == {
        "catalog": "accepted",
        "wrong": "wrong_answer",
        "empty": "runtime_error",
        "honest-a": "accepted",
        "honest-b": "accepted",
    }
    table = cli("results", RUN, "--format", "table")
    page.set_content(cli.screen())
    album.shoot("cli")
    graded_here = [line for line in table.splitlines() if "not scored (interpreter)" in line]
    assert len(graded_here) == 3, "accepted on this host: correct, timing not scored"

    # A reviewer reviews every accepted submission (only those enter the queue) and a pair.
    page.goto(f"{base}/")
    log_out(page)
    log_in(page, base, "rex", "/review/")
    expect(page.get_by_role("heading", name="Reviews", exact=True)).to_be_visible()
    album.shoot("review-dashboard")
    reviewed = [review_next(page, base, ids, album) for _ in range(3)]
    assert sorted(reviewed) == ["catalog", "honest-a", "honest-b"]
    page.goto(f"{base}/review/")
    page.get_by_role("button", name="Review the next item").click()
    expect(page.get_by_text("Nothing left in your queue.")).to_be_visible()
    album.shoot("review-queue-empty")
    decisions = read_db(
        lambda: dict(ReviewOutcome.objects.values_list("submission_id", "decision"))
    )
    assert decisions == {ids[n]: "accepted" for n in ("catalog", "honest-a", "honest-b")}
    judge_pair(page, base, ids, album)
    judgement = read_db(PairwiseJudgement.objects.get)
    winner = judgement.submission_a_id if judgement.winner == "a" else judgement.submission_b_id
    assert winner == ids["honest-a"]
    log_out(page)

    # The client reads its results in the browser.
    log_in(page, base, "pipeline", "/submissions/")
    table_rows = page.locator("#submission-table tbody tr")
    expect(table_rows).to_have_count(5)
    for name, pk in ids.items():
        expect(page.locator(f'tr[data-submission="{pk}"]')).to_contain_text(verdicts[name])
    album.shoot("client-submissions")
    page.locator(f'tr[data-submission="{ids["honest-a"]}"] a').first.click()
    expect(page).to_have_url(f"{base}/submissions/{ids['honest-a']}/")
    expect(page.locator("[data-verdict]")).to_have_text("accepted")
    expect(page.locator("[data-review]")).to_contain_text("accepted")
    album.shoot("client-submission")
    log_out(page)

    # The exporter builds SFT and preference snapshots; datasets loads them.
    log_in(page, base, "erin", "/exports/")
    sft_archive = build_export(page, base, album, slug="journey-sft", fmt="sft", into=tmp_path)
    expect(page.locator("#snapshot-progress")).to_contain_text(
        "3 of 3 submissions read, 2 rows written"
    )
    assert left_out(page) == {"hidden_content": "Quotes a hidden task file: 1"}  # the copy
    pref_archive = build_export(
        page, base, album, slug="journey-preference", fmt="preference", into=tmp_path
    )
    expect(page.locator("#snapshot-progress")).to_contain_text("5 of 5 submissions read")
    assert left_out(page) == {"hidden_content": "Quotes a hidden task file: 2"}  # both copies

    sft = load(sft_archive, tmp_path / "sft")
    by_id = {row["submission_id"]: row for row in sft}
    assert set(by_id) == {ids["honest-a"], ids["honest-b"]}, "honest accepted rows only"
    for name in ("honest-a", "honest-b"):
        row = by_id[ids[name]]
        assert (row["verdict"], row["review_decision"]) == ("accepted", "accepted")
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"]
        assert files[name].read_text().strip() in row["messages"][1]["content"]
        assert STATEMENT in row["messages"][0]["content"]
    shipped = "\n".join(json.dumps(row) for row in sft)
    assert "MAX_SINGLE_BLOCK" not in shipped, "the hidden expert solution is never exported"

    preference = load(pref_archive, tmp_path / "preference")
    judged_rows = [row for row in preference if row["source"] == "pairwise"]
    assert len(judged_rows) == 1
    (row,) = judged_rows
    assert row["chosen_submission_id"] == ids["honest-a"]
    assert row["rejected_submission_id"] == ids["honest-b"]
    assert row["votes"] == 1
    sides = {row[f"{side}_submission_id"] for row in preference for side in ("chosen", "rejected")}
    assert not sides & {ids["catalog"], ids["wrong"]}, "copies of hidden files are withheld"
    assert errors == []
