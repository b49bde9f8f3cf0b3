"""Who sees and edits which task: the owner, a colleague, an outsider, a reviewer, an admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from tasks.models import Task, TaskStatus
from tasks.selectors import can_edit_task, can_see_hidden_files, files_for_user, tasks_for_user
from tests import factories

pytestmark = pytest.mark.django_db

EVERYONE = ["author", "colleague", "outsider", "reviewer", "admin_user", "anonymous"]
SEES_HIDDEN = {"author", "reviewer", "admin_user"}


@pytest.fixture
def anonymous():
    return AnonymousUser()


@pytest.fixture
def tasks(author, colleague):
    """The author's draft, the colleague's published task, and a task marked published
    that has no version yet (nothing to show a solver)."""
    draft = factories.make_task(author, slug="authors-draft")
    published = factories.make_published_task(colleague, slug="colleagues-published")
    unversioned = factories.make_task(colleague, slug="no-version")
    Task.objects.filter(pk=unversioned.pk).update(status=TaskStatus.PUBLISHED)
    return {"draft": draft, "published": published, "unversioned": unversioned}


@pytest.mark.parametrize(
    ("who", "visible"),
    [
        ("author", {"authors-draft", "colleagues-published"}),
        ("colleague", {"colleagues-published", "no-version"}),
        ("outsider", {"colleagues-published"}),
        ("reviewer", {"authors-draft", "colleagues-published", "no-version"}),
        ("admin_user", {"authors-draft", "colleagues-published", "no-version"}),
        ("anonymous", {"colleagues-published"}),
    ],
)
def test_tasks_for_user(who, visible, tasks, request):
    user = request.getfixturevalue(who)
    assert set(tasks_for_user(user).values_list("slug", flat=True)) == visible


@pytest.mark.parametrize(
    ("who", "editable"),
    [
        ("author", True),
        ("colleague", False),
        ("outsider", False),
        ("reviewer", False),
        ("admin_user", True),
        ("anonymous", False),
    ],
)
def test_only_the_owner_or_an_admin_edits_a_draft(who, editable, tasks, request):
    assert can_edit_task(request.getfixturevalue(who), tasks["draft"]) is editable


@pytest.mark.parametrize("who", EVERYONE)
@pytest.mark.parametrize("status", ["in_review", "published", "retired"])
def test_nobody_edits_a_task_that_is_not_a_draft(who, status, tasks, request):
    task = tasks["draft"]
    task.status = status
    assert can_edit_task(request.getfixturevalue(who), task) is False


def test_an_owner_without_the_author_role_no_longer_edits(author, tasks):
    author.groups.clear()
    author = type(author).objects.get(pk=author.pk)
    assert can_edit_task(author, tasks["draft"]) is False


@pytest.mark.parametrize("who", EVERYONE)
def test_hidden_files_are_for_the_owner_reviewers_and_admins(who, tasks, request):
    user = request.getfixturevalue(who)
    assert can_see_hidden_files(user, tasks["draft"]) is (who in SEES_HIDDEN)
    expected = ["reference.py", "statement.md"] if who in SEES_HIDDEN else ["statement.md"]
    assert [f.path for f in files_for_user(user, tasks["draft"])] == expected


@pytest.mark.parametrize("who", EVERYONE)
def test_a_versions_hidden_files_follow_the_same_rule(who, tasks, request):
    user = request.getfixturevalue(who)
    task = tasks["published"]
    version = task.current_version
    paths = [f.path for f in files_for_user(user, task, version)]
    owner_side = who in {"colleague", "reviewer", "admin_user"}  # the colleague owns this one
    assert paths == (["reference.py", "statement.md"] if owner_side else ["statement.md"])
    assert all(f.version_id == version.pk for f in files_for_user(user, task, version))
