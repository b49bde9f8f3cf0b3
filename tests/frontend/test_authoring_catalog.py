"""Catalog pages around authoring: the dashboard, the author filter, version history
with diffs, bundle downloads and uploads, and hidden files kept from those without access."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tasks import services, validation
from tasks.models import FileRole, Task, TaskFile, TaskStatus, Visibility
from tests import factories, recorded
from tests.frontend.test_authoring import html_of, logged_in
from tests.tasks.test_authoring_services import complete_task, in_review

pytestmark = pytest.mark.django_db

HIDDEN_MARKER = "HIDDEN-4f1c0e"


# The dashboard --------------------------------------------------------------------------------


def chart_data(html: str, element_id: str) -> dict:
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html)
    assert match is not None
    return json.loads(match.group(1))


def test_the_dashboard_counts_tasks_by_kind_and_status(reviewer, author, text_answer):
    factories.make_task(author, slug="draft-kernel")
    factories.make_task(author, slug="draft-answer", kind="text-answer")
    # A stored task of a kind no grader is registered for any more is still counted.
    factories.make_task(author, slug="draft-engine", kind="quiz")
    factories.make_published_task(author, slug="live-kernel")
    in_review(author)
    html = html_of(logged_in(reviewer).get(reverse("dashboard")))

    chart = chart_data(html, "catalog-chart")
    series = {s["key"]: s["values"] for s in chart["series"]}
    labels = chart["labels"]
    kernel, answer, quiz = (labels.index(k) for k in ("GPU kernel", "Text answer", "quiz"))
    assert series["draft"][kernel] == series["draft"][answer] == series["draft"][quiz] == 1
    assert series["published"][kernel] == 1 and series["in_review"][kernel] == 1
    assert 'data-chart="catalog-chart"' in html
    assert '<span class="stat-value">5</span><span class="stat-label">tasks</span>' in html


def test_the_dashboard_lists_failing_validations_and_the_review_queue(reviewer, author):
    failing = complete_task(author, slug="failing-one", title="Failing one")
    run = validation.validation_start(task=failing, user=author)
    for result in run.results.all():
        # A real runtime error: an empty file defines no ModelNew (tests/recorded.py).
        validation.validation_record(result_id=result.pk, report=recorded.report(recorded.EMPTY))
    passing = complete_task(author, slug="fixed-one", title="Fixed one")
    factories.mark_validated(passing)
    waiting = in_review(author)

    html = html_of(logged_in(reviewer).get(reverse("dashboard")))
    failing_part = html[html.index("Latest validation failed") :]
    assert "Failing one" in failing_part and "Fixed one" not in failing_part
    waiting_part = html[html.index("Waiting for review") : html.index("Latest validation failed")]
    assert waiting.title in waiting_part


def test_the_dashboard_counts_only_what_the_user_may_see(colleague, author):
    # Another author builds the catalog too, but never sees this author's draft.
    factories.make_task(author, slug="secret-draft")
    factories.make_published_task(author, slug="public-one")
    html = html_of(logged_in(colleague).get(reverse("dashboard")))
    assert '<span class="stat-value">1</span><span class="stat-label">tasks</span>' in html


# The task list's author filter ------------------------------------------------------------------


def test_the_task_list_filters_by_author(reviewer, author, colleague):
    factories.make_task(author, slug="by-author")
    factories.make_task(colleague, slug="by-colleague")
    client = logged_in(reviewer)
    html = html_of(client.get(reverse("task-list"), {"author": "colleague"}))
    assert "by-colleague" in html and "by-author" not in html
    assert '<option value="author">author</option>' in html


# History and diffs -----------------------------------------------------------------------------


@pytest.fixture
def two_versions(author, reviewer) -> Task:
    task = in_review(author)
    services.task_review_decide(task=task, reviewer=reviewer, decision="approved")
    task.refresh_from_db()
    services.task_revise(task=task, user=author)
    task.refresh_from_db()
    TaskFile.objects.filter(task=task, path="solution.py").update(content="# faster\n")
    TaskFile.objects.create(
        task=task, path="notes.md", content="prompt note\n", visibility=Visibility.PROMPT
    )
    services.task_statement_update(task=task, user=author, text="Compute relu, v2.\n")
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=author)
    services.task_review_decide(task=task, reviewer=reviewer, decision="approved")
    task.refresh_from_db()
    assert task.versions.count() == 2
    return task


def test_history_diffs_two_versions_per_file(reviewer, two_versions):
    url = reverse("task-history", args=[two_versions.slug])
    html = html_of(logged_in(reviewer).get(url, {"old": "1", "new": "2", "mode": "unified"}))
    assert "v1 → v2" in html
    assert re.search(
        r'<span class="file-path">solution.py</span>\s*<span class="chip chip-changed">', html
    )
    assert '<span class="chip chip-added">added</span>' in html  # notes.md
    assert '<tr class="diff-add">' in html and "# faster" in html

    split = html_of(
        logged_in(reviewer).get(
            url,
            {"old": "1", "new": "2", "mode": "split"},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="diff",
        )
    )
    assert "<html" not in split
    assert 'class="diff diff-split"' in split and "diff-del" in split


def test_history_shows_the_latest_change_by_default(outsider, two_versions):
    html = html_of(logged_in(outsider).get(reverse("task-history", args=[two_versions.slug])))
    assert "v1 → v2: 2 files changed" in html


def test_the_draft_and_hidden_files_are_not_diffed_for_outsiders(outsider, two_versions):
    client = logged_in(outsider)
    url = reverse("task-history", args=[two_versions.slug])
    html = html_of(client.get(url, {"old": "1", "new": "2"}))
    assert "statement.md" in html and "notes.md" in html
    assert "solution.py" not in html and "task.toml" not in html
    assert "Working draft" not in html
    assert "No differences" not in html
    assert "v1 → v2" in html
    html = html_of(client.get(url, {"old": "draft", "new": "2"}))
    assert "→" not in html  # the draft is not a choice for them


# Hidden files -----------------------------------------------------------------------------------


@pytest.fixture
def published_with_hidden(author) -> Task:
    task = complete_task(author, slug="with-hidden")
    TaskFile.objects.filter(task=task, path="solution.py").update(content=f"# {HIDDEN_MARKER}\n")
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=author)
    services.task_publish(task=task, reviewer=factories.make_user("reviewer"))
    return task


@pytest.mark.parametrize("who", ["colleague", "outsider"])
def test_hidden_files_never_reach_users_without_access(request, published_with_hidden, who):
    client = logged_in(request.getfixturevalue(who))
    slug = published_with_hidden.slug
    for url in (
        reverse("task-detail", args=[slug]),
        reverse("task-history", args=[slug]) + "?old=1&new=1",
    ):
        assert HIDDEN_MARKER not in html_of(client.get(url))
    for url in (
        reverse("task-bundle", args=[slug]),
        reverse("task-validation", args=[slug]),
        reverse("task-edit", args=[slug]),
    ):
        response = client.get(url)
        assert response.status_code == 404, url
        assert HIDDEN_MARKER.encode() not in response.content


def test_the_author_downloads_the_draft_and_each_version_as_a_zip(author, published_with_hidden):
    client = logged_in(author)
    slug = published_with_hidden.slug
    response = client.get(reverse("task-bundle", args=[slug]), {"version": "1"})
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{slug}-v1.zip"'
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert HIDDEN_MARKER in archive.read(f"{slug}/solution.py").decode()
        assert f"{slug}/task.toml" in archive.namelist()
    assert client.get(reverse("task-bundle", args=[slug]), {"version": "9"}).status_code == 404


# Importing a bundle --------------------------------------------------------------------------


def test_an_uploaded_bundle_becomes_the_authors_draft(author, colleague):
    source = complete_task(colleague, slug="shared-relu")
    data = services.bundle_zip_build(task=source)
    Task.objects.filter(pk=source.pk).delete()

    response = logged_in(author).post(
        reverse("task-import"), {"bundle": SimpleUploadedFile("shared-relu.zip", data)}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("task-edit", args=["shared-relu"])
    task = Task.objects.get(slug="shared-relu")
    assert (task.owner, task.status) == (author, TaskStatus.DRAFT)
    assert task.files.filter(role=FileRole.NEGATIVE).count() == 1


def test_an_invalid_upload_lists_each_problem_with_file_and_field(author):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("bad/task.toml", 'slug = "Bad"\ntitle = "x"\nfiles = []\n')
        archive.writestr("bad/evil.py", "")
    html = html_of(
        logged_in(author).post(
            reverse("task-import"), {"bundle": SimpleUploadedFile("bad.zip", buffer.getvalue())}
        ),
        status=400,
    )
    assert "The bundle was not imported" in html
    assert "<code>bad/task.toml: slug</code>" in html
    assert "<code>bad/task.toml: kind</code> is required" in html
    assert "evil.py is in the bundle but not listed" in html
    assert not Task.objects.exists()
