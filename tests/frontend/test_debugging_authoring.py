"""Authoring a debugging task through Django's test client: the file tree of its
codebase, and the grading form that lists every test of the draft's test files for
the author to mark FAIL_TO_PASS, PASS_TO_PASS or not run. The draft is the
catalog's softmax task, imported as the bundle importer does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from tasks import services
from tasks.bundle import load_bundle
from tasks.models import FileRole, Task, Visibility
from tests.frontend.test_authoring import html_of, logged_in

pytestmark = pytest.mark.django_db

SOFTMAX = Path(__file__).resolve().parents[2] / "reference_solutions" / "debug-softmax-overflow"
REPRO = "tests/test_repro.py"
HIDDEN = "tests/test_softmax_hidden.py"


@pytest.fixture
def draft(author) -> Task:
    services.bundle_import(bundle=load_bundle(SOFTMAX), user=author, publish=False)
    return Task.objects.get(slug=SOFTMAX.name)


def rows_of(html: str) -> dict[str, str]:
    """Each test row of the grading form: test id -> the group selected in it."""
    rows = {}
    for test, cells in re.findall(r'<tr data-test="([^"]+)"[^>]*>(.*?)</tr>', html, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', cells)
        rows[test] = chosen.group(1) if chosen else ""
    return rows


def form_post(html: str, **changes: str) -> dict[str, str]:
    """What the browser would send for the page as it is, with ``changes``."""
    post = {}
    for name, value in re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', html):
        post[name] = value
    for name, cells in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', html, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', cells)
        post[name] = chosen.group(1) if chosen else ""
    for name, text in re.findall(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', html, re.S):
        post[name] = text.lstrip("\n")
    post.pop("csrfmiddlewaretoken", None)
    return {**post, **changes}


def field_of(html: str, test: str, kind: str) -> str:
    index = list(rows_of(html)).index(test)
    return f"{kind}_{index}"


def test_the_files_tab_shows_the_codebase_as_a_tree(author, draft):
    source = draft.files.get(path="repo/softmax.py")
    html = html_of(logged_in(author).get(reverse("task-file-edit", args=[draft.slug, source.pk])))
    sidebar = html[html.index('<aside class="file-tree"') : html.index("</aside>")]
    lines = re.findall(
        r'<li class="(?:file-tree-folder )?depth-(\d)"[^>]*>(.*?)</li>', sidebar, re.S
    )
    shown = [
        (int(depth), re.sub(r"<[^>]+>|\s+", " ", text).split()[0] if "<a" in text else text)
        for depth, text in lines
    ]
    assert shown == [
        (0, "bad/"),
        *[(1, name) for name in sorted(p.name for p in (SOFTMAX / "bad").iterdir())],
        (0, "fix.diff"),
        (0, "repo/"),
        (1, "softmax.py"),
        (1, "tests/"),
        (2, "test_repro.py"),
        (2, "test_softmax_hidden.py"),
        (0, "statement.md"),
    ]
    assert 'title="repo/softmax.py" aria-current="page"' in sidebar


def test_the_grading_form_lists_every_test_with_its_group(author, draft):
    html = html_of(logged_in(author).get(reverse("task-grading", args=[draft.slug])))

    rows = rows_of(html)
    grading = draft.grading
    assert [t for t, g in rows.items() if g == "fail_to_pass"] == grading["fail_to_pass"]
    assert [t for t, g in rows.items() if g == "pass_to_pass"] == grading["pass_to_pass"]
    assert all(test.startswith((REPRO, HIDDEN)) for test in rows)
    # Which tests solvers are shown: the visible file's, not the hidden one's.
    visible = re.findall(
        r'<tr data-test="([^"]+)"[^>]*>\s*<th[^>]*>.*?</th>\s*<td>visible', html, re.S
    )
    assert visible and all(test.startswith(REPRO) for test in visible)


def test_marking_tests_and_settings_saves_the_table_the_bundle_check_accepts(author, draft):
    client = logged_in(author)
    url = reverse("task-grading", args=[draft.slug])
    html = html_of(client.get(url))
    dropped = draft.grading["pass_to_pass"][-1]
    measured = draft.grading["fail_to_pass"][0]
    post = form_post(
        html,
        test_timeout_s="30",
        fix_paths="softmax.py\r\n",
        **{
            field_of(html, dropped, "group"): "",
            field_of(html, measured, "memory"): "50",
            "tol_float32_rtol": "0.0001",
        },
    )
    before = dict(draft.grading)

    response = client.post(url, post)

    assert response.status_code == 302, response.content.decode()[:2000]
    draft.refresh_from_db()
    assert draft.grading["pass_to_pass"] == [t for t in before["pass_to_pass"] if t != dropped]
    assert draft.grading["fail_to_pass"] == before["fail_to_pass"]
    assert "network" not in draft.grading  # "none", the default
    assert draft.grading["test_timeout_s"] == 30
    assert draft.grading["fix_paths"] == ["softmax.py"]
    assert draft.grading["peak_memory"] == {measured: 50}
    assert draft.grading["tolerances"]["float32"]["rtol"] == 0.0001
    assert services.draft_problems(draft) == []
    again = html_of(client.get(url))
    assert rows_of(again)[dropped] == ""
    assert f'name="{field_of(again, measured, "memory")}" value="50' in again


def test_a_table_the_kind_refuses_is_not_saved_and_says_why(author, draft):
    client = logged_in(author)
    url = reverse("task-grading", args=[draft.slug])
    html = html_of(client.get(url))
    before = dict(draft.grading)
    nothing_to_fix = {field_of(html, t, "group"): "" for t in draft.grading["fail_to_pass"]}

    refused = html_of(client.post(url, form_post(html, **nothing_to_fix)), status=400)
    assert "needs at least one test the fix must make pass" in refused

    measured = draft.grading["fail_to_pass"][0]
    budget = field_of(html, measured, "memory")
    on_loopback = client.post(url, form_post(html, network="loopback", **{budget: "50"}))
    assert "socket buffers are not charged" in html_of(on_loopback, status=400)

    negative = client.post(url, form_post(html, **{field_of(html, measured, "memory"): "-5"}))
    cell = re.search(
        rf'<td class="field-invalid">\s*<input[^>]*name="{field_of(html, measured, "memory")}"'
        r".*?</td>",
        html_of(negative, status=400),
        re.S,
    )
    assert cell is not None and "must be a positive number of MiB" in cell.group(0)
    draft.refresh_from_db()
    assert draft.grading == before


def test_a_new_test_file_adds_its_tests_unmarked(author, draft):
    services.task_file_save(
        task=draft,
        user=author,
        path="repo/tests/test_more.py",
        role=FileRole.TEST,
        visibility=Visibility.HIDDEN,
        content="def helper():\n    return 1\n\n\ndef test_extra(seed):\n    return seed\n",
    )
    html = html_of(logged_in(author).get(reverse("task-grading", args=[draft.slug])))

    rows = rows_of(html)
    assert rows["tests/test_more.py::test_extra"] == ""
    assert "tests/test_more.py::helper" not in rows
