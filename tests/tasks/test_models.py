"""Invariants of the task models, enforced by the models and by PostgreSQL itself."""

from __future__ import annotations

import hashlib

import pytest
from django.db import IntegrityError, connection, transaction

from rubrics.models import Criterion, Rubric
from tasks.models import ImmutableVersionError, Task, TaskFile, TaskVersion
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def version():
    task = factories.make_published_task()
    assert task.current_version is not None
    return task.current_version


def refused_by_database(sql: str, params: list) -> None:
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_a_frozen_version_cannot_be_saved_again(version):
    version.title = "Changed"
    with pytest.raises(ImmutableVersionError):
        version.save()
    assert TaskVersion.objects.get(pk=version.pk).title != "Changed"


def test_versions_cannot_be_updated_through_a_queryset(version):
    with pytest.raises(ImmutableVersionError):
        TaskVersion.objects.filter(pk=version.pk).update(title="Changed")
    with pytest.raises(ImmutableVersionError):
        version.task.versions.update(statement="Changed")
    assert TaskVersion.objects.get(pk=version.pk).title != "Changed"


def test_a_versions_files_cannot_be_edited(version):
    frozen = version.files.get(path="reference.py")
    original = frozen.content
    frozen.content = "import os\n"
    with pytest.raises(ImmutableVersionError):
        frozen.save()
    assert TaskFile.objects.get(pk=frozen.pk).content == original


def test_a_draft_file_can_be_edited_and_its_hash_follows():
    task = factories.make_task()
    draft = task.files.get(path="reference.py")
    draft.content = "x = 1\n"
    draft.save()
    draft.refresh_from_db()
    assert draft.content == "x = 1\n"
    assert draft.sha256 == hashlib.sha256(b"x = 1\n").hexdigest()


INSERT_FILE = (
    "INSERT INTO tasks_taskfile (created_at, updated_at, task_id, version_id, path, content,"
    " visibility, role, expected_verdict, note, sha256)"
    " VALUES (now(), now(), %s, %s, 'raw.py', '', 'hidden', 'other', '', '', '')"
)


def test_a_file_of_neither_draft_nor_version_is_refused_by_the_database():
    refused_by_database(INSERT_FILE, [None, None])


def test_a_file_of_both_draft_and_version_is_refused_by_the_database(version):
    refused_by_database(INSERT_FILE, [version.task_id, version.pk])


def test_moving_a_draft_file_into_a_version_is_refused_by_the_database(version):
    draft_file = version.task.files.get(path="reference.py")
    refused_by_database(
        "UPDATE tasks_taskfile SET version_id = %s WHERE id = %s", [version.pk, draft_file.pk]
    )
    refused_by_database("UPDATE tasks_taskfile SET task_id = NULL WHERE id = %s", [draft_file.pk])
    assert TaskFile.objects.get(pk=draft_file.pk).version_id is None


def test_a_raw_insert_for_exactly_one_owner_is_accepted(version):
    with connection.cursor() as cursor:
        cursor.execute(INSERT_FILE, [version.task_id, None])
    assert version.task.files.filter(path="raw.py").exists()


def test_a_negative_without_expected_verdict_is_refused_by_the_database():
    task = factories.make_task()
    with pytest.raises(IntegrityError), transaction.atomic():
        TaskFile.objects.create(task=task, path="bad/x.py", role="negative", expected_verdict="")
    negative = TaskFile.objects.create(
        task=task, path="bad/y.py", role="negative", expected_verdict="wrong_answer"
    )
    refused_by_database(
        "UPDATE tasks_taskfile SET expected_verdict = '' WHERE id = %s", [negative.pk]
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("status", "bogus"), ("status", ""), ("kind", "Not a kind!"), ("difficulty", "trivial")],
)
def test_an_invalid_choice_on_a_task_is_refused_by_the_database(column, value):
    task = factories.make_task()
    with pytest.raises(IntegrityError), transaction.atomic():
        Task.objects.filter(pk=task.pk).update(**{column: value})
    assert Task.objects.filter(pk=task.pk, status="draft").exists()


@pytest.mark.parametrize(("column", "value"), [("visibility", "public"), ("role", "oracle")])
def test_an_invalid_choice_on_a_file_is_refused_by_the_database(column, value):
    task = factories.make_task()
    with pytest.raises(IntegrityError), transaction.atomic():
        task.files.filter(path="reference.py").update(**{column: value})


def test_two_draft_files_cannot_share_a_path():
    task = factories.make_task()
    with pytest.raises(IntegrityError), transaction.atomic():
        TaskFile.objects.create(task=task, path="reference.py", content="again")


def test_version_numbers_and_hashes_are_unique_per_task(version):
    fields = {
        "task": version.task,
        "title": "t",
        "kind": "kernel",
        "difficulty": "easy",
        "hardware": "cpu",
    }
    with pytest.raises(IntegrityError), transaction.atomic():
        TaskVersion.objects.create(number=version.number, content_hash="0" * 64, **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        TaskVersion.objects.create(number=99, content_hash=version.content_hash, **fields)


def test_a_rubric_belongs_to_a_draft_or_a_version_and_points_are_not_zero(version):
    frozen = Rubric.objects.get(version=version)
    with pytest.raises(IntegrityError), transaction.atomic():
        Rubric.objects.create()
    with pytest.raises(IntegrityError), transaction.atomic():
        Rubric.objects.create(task=factories.make_task(), version=version)
    with pytest.raises(IntegrityError), transaction.atomic():
        Criterion.objects.create(rubric=frozen, key="zero", title="Zero", points=0, kind="human")


def test_a_frozen_versions_files_cannot_be_changed_through_a_queryset():
    from tasks.models import ImmutableVersionError, TaskFile
    from tests import factories

    task = factories.make_published_task()
    frozen = TaskFile.objects.filter(version=task.current_version)

    with pytest.raises(ImmutableVersionError):
        frozen.update(content="tampered")
    assert not TaskFile.objects.filter(content="tampered").exists()
    # Draft files stay editable.
    assert TaskFile.objects.filter(task=task).update(note="still a draft") == 2


def test_a_frozen_versions_rubric_cannot_be_changed():
    from rubrics.models import Criterion
    from tasks.models import ImmutableVersionError
    from tests import factories

    task = factories.make_published_task()
    frozen = Criterion.objects.filter(rubric__version=task.current_version)

    with pytest.raises(ImmutableVersionError):
        frozen.update(points=100)
    criterion = frozen.first()
    criterion.points = 100
    with pytest.raises(ImmutableVersionError):
        criterion.save()
