"""Task services: status transitions, who may make them, freezing versions, hashing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchwright import roles
from benchwright.state import InvalidTransition
from tasks import services
from tasks.models import Task, TaskFile, TaskStatus, TaskVersion
from tests import factories

pytestmark = pytest.mark.django_db

Action = Callable[[Task, Any, Any], Any]

# Each action, done by someone entitled to it (owner, reviewer): only the status decides.
ACTIONS: dict[str, Action] = {
    "submit": lambda task, owner, reviewer: (
        factories.mark_validated(task),
        services.task_submit_for_review(task=task, user=owner),
    ),
    "request_changes": lambda task, owner, reviewer: services.task_request_changes(
        task=task, reviewer=reviewer
    ),
    "publish": lambda task, owner, reviewer: services.task_publish(task=task, reviewer=reviewer),
    "revise": lambda task, owner, reviewer: services.task_revise(task=task, user=owner),
    "retire": lambda task, owner, reviewer: services.task_retire(task=task, user=owner),
}

# (from, action) -> to; every pair not listed must be refused.
ALLOWED = {
    (TaskStatus.DRAFT, "submit"): TaskStatus.IN_REVIEW,
    (TaskStatus.IN_REVIEW, "request_changes"): TaskStatus.DRAFT,
    (TaskStatus.IN_REVIEW, "publish"): TaskStatus.PUBLISHED,
    (TaskStatus.PUBLISHED, "revise"): TaskStatus.DRAFT,
    (TaskStatus.PUBLISHED, "retire"): TaskStatus.RETIRED,
    (TaskStatus.RETIRED, "revise"): TaskStatus.DRAFT,
}
PAIRS = [(status, action) for status in TaskStatus.values for action in ACTIONS]


def task_in(status: str, owner: Any) -> Task:
    task = factories.make_task(owner)
    Task.objects.filter(pk=task.pk).update(status=status)
    task.refresh_from_db()
    return task


@pytest.mark.parametrize(
    ("status", "action"),
    [pair for pair in PAIRS if pair in ALLOWED],
    ids=[f"{s}-{a}" for s, a in PAIRS if (s, a) in ALLOWED],
)
def test_an_allowed_transition_moves_the_task(status, action, author, reviewer):
    task = task_in(status, author)
    ACTIONS[action](task, author, reviewer)
    task.refresh_from_db()
    assert task.status == ALLOWED[(status, action)]


@pytest.mark.parametrize(
    ("status", "action"),
    [pair for pair in PAIRS if pair not in ALLOWED],
    ids=[f"{s}-{a}" for s, a in PAIRS if (s, a) not in ALLOWED],
)
def test_a_refused_transition_raises_and_leaves_the_row_unchanged(status, action, author, reviewer):
    task = task_in(status, author)
    before = Task.objects.values().get(pk=task.pk)
    with pytest.raises(InvalidTransition):
        ACTIONS[action](task, author, reviewer)
    assert Task.objects.values().get(pk=task.pk) == before
    assert TaskVersion.objects.count() == 0  # a refused publish froze nothing


def test_a_draft_cannot_be_published_without_review(author, reviewer):
    task = factories.make_task(author)
    with pytest.raises(InvalidTransition, match="cannot move from 'draft'"):
        services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    assert (task.status, task.current_version, task.versions.count()) == ("draft", None, 0)


def test_publishing_freezes_the_draft_and_makes_it_current(author, reviewer):
    task = factories.make_task(author)
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=author)
    version = services.task_publish(task=task, reviewer=reviewer)
    task.refresh_from_db()
    assert (task.status, task.current_version) == ("published", version)
    assert version.created_by == reviewer
    assert sorted(f.path for f in version.files.all()) == ["reference.py", "statement.md"]


def test_authors_cannot_approve_their_own_task(author):
    roles.grant(author, roles.REVIEWER)
    task = factories.make_task(author)
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=author)
    with pytest.raises(services.PermissionDenied, match="cannot approve their own"):
        services.task_publish(task=task, reviewer=author)
    task.refresh_from_db()
    assert (task.status, task.versions.count()) == ("in_review", 0)


def test_an_admin_may_publish_a_task_they_own(admin_user):
    task = factories.make_task(admin_user)
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=admin_user)
    services.task_publish(task=task, reviewer=admin_user)
    task.refresh_from_db()
    assert task.status == "published"


@pytest.mark.parametrize(
    ("action", "who", "message"),
    [
        ("submit", "colleague", "only the task's author"),
        ("revise", "colleague", "only the author"),
        ("retire", "outsider", "only the author"),
        ("publish", "colleague", "only reviewers"),
        ("request_changes", "author", "only reviewers"),
    ],
)
def test_only_entitled_users_act(action, who, message, author, colleague, outsider, request):
    start = {"submit": "draft", "revise": "published", "retire": "published"}.get(action)
    task = task_in(start or "in_review", author)
    user = request.getfixturevalue(who)
    before = Task.objects.values().get(pk=task.pk)
    with pytest.raises(services.PermissionDenied, match=message):
        ACTIONS[action](task, user, user)
    assert Task.objects.values().get(pk=task.pk) == before


def test_freezing_the_same_content_twice_gives_the_same_version(author):
    task = factories.make_task(author)
    first, created = services.version_freeze(task=task, user=author, manifest_text="a = 1\n")
    again, created_again = services.version_freeze(task=task, user=author)
    assert (created, created_again) == (True, False)
    assert again == first and first.number == 1 and first.manifest == "a = 1\n"
    assert TaskVersion.objects.count() == 1


def test_freezing_changed_content_gives_the_next_number(author):
    task = factories.make_task(author)
    first, _ = services.version_freeze(task=task, user=author)
    draft_file = task.files.get(path="reference.py")
    draft_file.content += "# changed\n"
    draft_file.save()
    second, created = services.version_freeze(task=task, user=author)
    assert created and second.number == 2 and second.content_hash != first.content_hash
    assert "# changed" not in first.files.get(path="reference.py").content
    assert first.rubric.criteria.count() == second.rubric.criteria.count() == 2


def test_content_hash_ignores_order_and_sees_every_byte():
    manifest = {"slug": "a", "tags": ["x"], "files": [{"path": "a.py"}]}
    files = {"a.py": b"1", "b/c.py": b"2"}
    digest = services.content_hash(manifest, files)
    reordered = dict(reversed(list(files.items())))
    assert services.content_hash(dict(reversed(list(manifest.items()))), reordered) == digest
    assert services.content_hash(manifest, {**files, "a.py": b"1 "}) != digest
    assert services.content_hash(manifest, {"a.py": b"1", "b/d.py": b"2"}) != digest
    assert services.content_hash({**manifest, "tags": ["y"]}, files) != digest


def test_draft_manifest_lists_files_by_path_and_names_the_statement():
    task = factories.make_task()
    TaskFile.objects.create(task=task, path="Z.py", content="", role="other")
    TaskFile.objects.create(task=task, path="a/b.py", content="", role="test")
    manifest = services.draft_manifest(task)
    assert [f["path"] for f in manifest["files"]] == [
        "Z.py",
        "a/b.py",
        "reference.py",
        "statement.md",
    ]
    assert manifest["statement"] == "statement.md"
    assert [c["id"] for c in manifest["rubric"]["criteria"]] == ["correct", "clarity"]


def test_an_unvalidated_draft_cannot_go_to_review(author):
    task = factories.make_task(author)

    with pytest.raises(services.NotValidated):
        services.task_submit_for_review(task=task, user=author)
    task.refresh_from_db()
    assert task.status == "draft"


def test_a_draft_changed_after_validation_must_be_validated_again(author):
    task = factories.make_task(author)
    factories.mark_validated(task)
    task.files.filter(path="statement.md").update(content="changed")

    with pytest.raises(services.NotValidated):
        services.task_submit_for_review(task=task, user=author)


def test_only_an_admin_may_skip_validation(author, admin_user):
    task = factories.make_task(author)

    with pytest.raises(services.PermissionDenied):
        services.task_submit_for_review(task=task, user=author, require_validation=False)
    services.task_submit_for_review(task=task, user=admin_user, require_validation=False)
    task.refresh_from_db()
    assert task.status == "in_review"
