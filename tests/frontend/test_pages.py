"""The browser UI's pages through Django's test client, on the real database."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from frontend.views import TASKS_PER_PAGE
from rubrics.models import Criterion, CriterionKind
from tasks import services as task_services
from tasks.models import FileRole, Task, TaskFile, Visibility
from tests import factories

PASSWORD = "correct horse battery"
HIDDEN_MARKER = "HIDDEN-MARKER-5c1e9a"
PROMPT_MARKER = "PROMPT-MARKER-77b2d0"

pytestmark = pytest.mark.django_db


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def publish(task: Task) -> Task:
    reviewer = factories.make_user("reviewer")
    factories.mark_validated(task)
    task_services.task_submit_for_review(task=task, user=task.owner)
    task_services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    return task


def page_text(response: Any) -> str:
    assert response.status_code == 200
    return response.content.decode()


def statement_html(html: str) -> str:
    """Only the rendered statement: the raw statement.md file is shown elsewhere, escaped."""
    match = re.search(r'<article class="markdown">(.*?)</article>', html, re.S)
    assert match is not None
    return match.group(1)


def listed_slugs(html: str) -> set[str]:
    return set(re.findall(r'<span class="slug">([^<]+)</span>', html))


# Logging in and out ------------------------------------------------------------------------


def test_login_page_renders_a_form_with_a_csrf_token(client):
    html = page_text(client.get(reverse("login")))
    assert '<form method="post" action="/login/"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="password"' in html


def test_logging_in_through_the_form_lands_on_the_task_list(author):
    client = Client(enforce_csrf_checks=True)
    login_page = page_text(client.get(reverse("login")))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page)
    assert token is not None

    response = client.post(
        reverse("login"),
        {"username": "author", "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("task-list")
    assert "author" in page_text(client.get(reverse("task-list")))


def test_login_never_redirects_to_another_site(client, author):
    response = client.post(
        f"{reverse('login')}?next=https://evil.example/",
        {"username": "author", "password": PASSWORD},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("task-list")


def test_a_wrong_password_shows_an_error_and_logs_nobody_in(client, author):
    response = client.post(reverse("login"), {"username": "author", "password": "nope"})
    assert response.status_code == 200
    assert 'class="form-errors"' in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("url", ["/", "/tasks/", "/tasks/some-task/"])
def test_anonymous_users_are_redirected_to_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(f"{reverse('login')}?next=")


def test_logout_refuses_get_and_keeps_the_session(author):
    client = logged_in(author)
    assert client.get(reverse("logout")).status_code == 405
    assert client.get(reverse("task-list")).status_code == 200


def test_logout_by_post_ends_the_session(author):
    client = logged_in(author)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    assert client.get(reverse("task-list")).status_code == 302


def test_every_page_carries_the_logout_form_with_a_csrf_token(author):
    task = factories.make_task(author)
    for url in (reverse("task-list"), reverse("task-detail", args=[task.slug])):
        html = page_text(logged_in(author).get(url))
        logout_form = re.search(r'<form method="post" action="/logout/".*?</form>', html, re.S)
        assert logout_form is not None
        assert 'name="csrfmiddlewaretoken"' in logout_form.group(0)


# The frame -------------------------------------------------------------------------------


def test_the_frame_shows_the_brand_the_user_and_their_roles(reviewer):
    html = page_text(logged_in(reviewer).get(reverse("task-list")))
    assert '<a class="brand" href="/">Benchwright</a>' in html
    assert '<span class="account-name">reviewer</span>' in html
    assert '<span class="chip">reviewer</span>' in html
    assert 'aria-current="page">Tasks</a>' in html


def test_the_admin_link_is_shown_to_staff_only(admin_user, author):
    assert reverse("admin:index") in page_text(logged_in(admin_user).get("/"))
    assert reverse("admin:index") not in page_text(logged_in(author).get("/"))


def test_assets_are_served_from_this_server_only(author):
    html = page_text(logged_in(author).get("/"))
    assert '<script src="/static/vendor/htmx/htmx.min.js" defer></script>' in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


# The task list ---------------------------------------------------------------------------


@pytest.fixture
def catalog(author, colleague):
    """The owner's draft, a colleague's draft and a colleague's published task."""
    return {
        "own-draft": factories.make_task(author, slug="own-draft"),
        "other-draft": factories.make_task(colleague, slug="other-draft"),
        "published": factories.make_published_task(colleague, slug="published"),
    }


@pytest.mark.parametrize(
    ("viewer", "expected"),
    [
        ("author", {"own-draft", "published"}),
        ("colleague", {"other-draft", "published"}),
        ("outsider", {"published"}),
        ("reviewer", {"own-draft", "other-draft", "published"}),
    ],
)
def test_the_task_list_shows_only_the_tasks_the_user_may_see(request, catalog, viewer, expected):
    user = request.getfixturevalue(viewer)
    html = page_text(logged_in(user).get(reverse("task-list")))
    assert listed_slugs(html) == expected


def test_the_root_url_shows_the_task_list(author, catalog):
    html = page_text(logged_in(author).get("/"))
    assert listed_slugs(html) == {"own-draft", "published"}


@pytest.fixture
def filterable(reviewer, text_answer):
    owner = factories.make_user("author", username="kerneler")
    factories.make_task(owner, slug="softmax-rows", title="Row softmax", tags=["triton", "softmax"])
    factories.make_task(
        owner, slug="trace-reading", kind="text-answer", hardware="h100", tags=["nsight"]
    )
    factories.make_published_task(owner, slug="fused-gelu", title="Fused GELU", tags=["triton"])
    return logged_in(reviewer)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=soft", {"softmax-rows"}),
        ("q=GELU", {"fused-gelu"}),
        ("kind=text-answer", {"trace-reading"}),
        ("status=published", {"fused-gelu"}),
        ("hardware=h100", {"trace-reading"}),
        ("tag=triton", {"softmax-rows", "fused-gelu"}),
        ("tag=triton&status=draft", {"softmax-rows"}),
        ("kind=no-such-kind&q=gelu", {"fused-gelu"}),
    ],
)
def test_filters_narrow_the_task_list(filterable, query, expected):
    html = page_text(filterable.get(f"{reverse('task-list')}?{query}"))
    assert listed_slugs(html) == expected


def test_the_tag_filter_offers_only_tags_of_visible_tasks(colleague, filterable):
    html = page_text(logged_in(colleague).get(reverse("task-list")))
    assert '<option value="triton">' in html
    assert '<option value="nsight">' not in html


def test_an_htmx_request_gets_only_the_table_fragment(filterable):
    response = filterable.get(f"{reverse('task-list')}?q=soft", headers={"HX-Request": "true"})
    html = page_text(response)
    assert "<html" not in html
    assert listed_slugs(html) == {"softmax-rows"}
    assert "HX-Request" in response["Vary"]


def test_an_htmx_history_restore_gets_the_whole_page(filterable):
    response = filterable.get(
        f"{reverse('task-list')}?q=soft",
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )
    assert "<html" in page_text(response)


def test_the_filter_form_works_without_javascript_and_with_htmx(filterable):
    html = page_text(filterable.get(reverse("task-list")))
    form = re.search(r'<form class="filters"[^>]*>', html)
    assert form is not None
    assert 'method="get" action="/tasks/"' in form.group(0)
    assert 'hx-get="/tasks/" hx-target="#task-table" hx-push-url="true"' in form.group(0)
    assert '<div id="task-table"' in html


def test_long_lists_are_paged_and_pages_keep_the_filters(author, text_answer):
    Task.objects.bulk_create(
        Task(owner=author, slug=f"bulk-{n:03d}", title=f"Bulk {n}", kind="text-answer")
        for n in range(TASKS_PER_PAGE + 1)
    )
    client = logged_in(author)
    first = page_text(client.get(f"{reverse('task-list')}?kind=text-answer"))
    assert len(listed_slugs(first)) == TASKS_PER_PAGE
    assert 'href="?kind=text-answer&amp;page=2"' in first
    second = page_text(client.get(f"{reverse('task-list')}?kind=text-answer&page=2"))
    assert listed_slugs(second) == {f"bulk-{TASKS_PER_PAGE:03d}"}


def test_the_task_list_query_count_does_not_grow_with_tasks(author, django_assert_max_num_queries):
    for _ in range(15):
        factories.make_task(author)
    client = logged_in(author)
    with django_assert_max_num_queries(8):
        html = page_text(client.get(reverse("task-list")))
    assert len(listed_slugs(html)) == 15


# The task page ---------------------------------------------------------------------------


def test_the_task_page_renders_the_statement_markdown(author):
    statement = "# Row softmax\n\nCompute it.\n\n```python\ndef f(x):\n    return x < 1\n```\n"
    task = factories.make_task(author, statement=statement)
    page = page_text(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    html = statement_html(page)
    assert "<h1>Row softmax</h1>" in html
    assert '<pre><code class="language-python">def f(x):\n    return x &lt; 1' in html


def test_the_task_page_strips_scripts_event_handlers_and_javascript_links(author):
    statement = (
        "Hello <script>alert('s')</script>\n\n"
        '<img src="x" onerror="alert(1)">\n\n'
        "[click](javascript:alert(2)) "
        '<a href="javascript:alert(3)" onclick="alert(4)">raw</a>\n\n'
        '<iframe src="https://example.com/"></iframe>\n'
    )
    task = factories.make_task(author, statement=statement)
    page = page_text(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    html = statement_html(page)
    assert "Hello" in html
    for forbidden in ("<script", "alert('s')", "onerror", "onclick", "javascript:", "<iframe"):
        assert forbidden not in html
    # The page's only scripts are its own (htmx, the math typesetter), and no link
    # anywhere runs code.
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == [
        '<script src="/static/vendor/htmx/htmx.min.js" defer>',
        '<script src="/static/frontend/build/math.js" defer>',
    ]
    assert 'href="javascript:' not in page


def test_the_task_page_shows_metadata_tags_and_status(author):
    task = factories.make_published_task(author, tags=["triton", "fusion"], hardware="h100")
    html = page_text(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    assert f"<h1>{task.title}</h1>" in html
    assert "NVIDIA H100" in html
    assert '<a class="tag" href="/tasks/?tag=triton">triton</a>' in html
    assert '<span class="badge badge-published badge-large">Published</span>' in html
    assert "<dd>v1</dd>" in html


def test_the_rubric_shows_signed_points_and_the_positive_total(author):
    task = factories.make_task(author)
    Criterion.objects.create(
        rubric=task.rubric,
        key="integrity-penalty",
        title="Integrity",
        points=-3,
        kind=CriterionKind.AUTOMATIC,
        rule={"type": "integrity", "clean": False},
        position=2,
    )
    html = page_text(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    assert '<td class="num points">+5</td>' in html
    assert '<td class="num points points-penalty">\N{MINUS SIGN}3</td>' in html
    assert "<code>verdict is accepted</code>" in html
    assert "<code>integrity findings present</code>" in html
    assert '<span class="level-score">2</span> Clear' in html
    assert 'Total of positive points</th><td class="num points">7</td>' in html


def test_the_version_history_lists_numbers_and_hash_prefixes(author):
    task = publish(factories.make_task(author))
    version = task.current_version
    assert version is not None
    html = page_text(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    assert f'<code title="{version.content_hash}">{version.content_hash[:12]}</code>' in html
    assert "v1 <span" in html


@pytest.fixture
def task_with_hidden_file(author):
    task = factories.make_task(author, slug="has-secrets")
    TaskFile.objects.create(
        task=task,
        path="tests/check.py",
        content=f"SECRET = '{HIDDEN_MARKER}'\n",
        visibility=Visibility.HIDDEN,
        role=FileRole.TEST,
    )
    TaskFile.objects.create(
        task=task,
        path="starter.py",
        content=f"# {PROMPT_MARKER}\n",
        visibility=Visibility.PROMPT,
        role=FileRole.STARTER,
    )
    return publish(task)


@pytest.mark.parametrize(
    ("viewer", "sees_hidden"),
    [("author", True), ("reviewer", True), ("colleague", False), ("outsider", False)],
)
def test_hidden_file_content_reaches_only_the_owner_and_reviewers(
    request, task_with_hidden_file, viewer, sees_hidden
):
    user = request.getfixturevalue(viewer)
    url = reverse("task-detail", args=[task_with_hidden_file.slug])
    response = logged_in(user).get(url)
    assert response.status_code == 200
    assert (HIDDEN_MARKER.encode() in response.content) is sees_hidden
    assert (b"tests/check.py" in response.content) is sees_hidden
    assert PROMPT_MARKER.encode() in response.content


def test_hidden_files_are_marked_hidden(author, task_with_hidden_file):
    html = page_text(logged_in(author).get(reverse("task-detail", args=["has-secrets"])))
    summaries = {
        re.search(r'class="file-path">([^<]+)<', chunk).group(1): chunk  # type: ignore[union-attr]
        for chunk in re.findall(r"<summary>(.*?)</summary>", html, re.S)
    }
    assert "badge-hidden" in summaries["tests/check.py"]
    assert "badge-hidden" not in summaries["starter.py"]


def test_file_contents_are_shown_as_escaped_code(author):
    task = factories.make_task(author)
    html = page_text(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    assert '<pre><code class="language-python">import torch\nfrom torch import nn' in html


@pytest.mark.parametrize("viewer", ["colleague", "outsider"])
def test_another_authors_draft_is_a_404(request, author, viewer):
    draft = factories.make_task(author, slug="secret-draft")
    client = logged_in(request.getfixturevalue(viewer))
    hidden = client.get(reverse("task-detail", args=[draft.slug]))
    missing = client.get(reverse("task-detail", args=["no-such-task"]))
    assert hidden.status_code == missing.status_code == 404
    assert b"secret-draft" not in hidden.content
    assert b'<a class="brand"' in hidden.content
