"""Importing and exporting task bundles: services and the management commands."""

from __future__ import annotations

import dataclasses
import io
import tomllib
from pathlib import Path

import pytest
import tomli_w
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError
from django.test import override_settings

from benchwright import roles
from rubrics.models import Criterion, Rubric
from tasks import services
from tasks.bundle import load_bundle, parse_bundle
from tasks.models import Task, TaskFile, TaskStatus, TaskVersion
from tests import factories
from tests.tasks.test_bundle import MALFORMED, broken, edit, valid_files, write_bundle

pytestmark = pytest.mark.django_db

SLUG = "row-softmax"


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> str:
    """Run a command that must fail; its error output and message."""
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(*args, stdout=io.StringIO(), stderr=err)
    return err.getvalue() + str(caught.value)


def current(task: Task) -> TaskVersion:
    assert task.current_version is not None
    return task.current_version


def counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Task, TaskVersion, TaskFile, Rubric, Criterion)
    }


def read_tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def bundle_dir(tmp_path):
    return write_bundle(tmp_path / "catalog" / SLUG, valid_files())


def test_import_creates_and_publishes_the_task(bundle_dir):
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: created task, version 1\n"
    task = Task.objects.get(slug=SLUG)
    version = task.versions.get()
    assert (task.status, task.current_version_id, version.number) == ("published", version.pk, 1)
    assert task.owner.username == "catalog" and roles.is_admin(task.owner)
    assert task.statement == valid_files()["statement.md"].decode() == version.statement
    assert version.manifest == valid_files()["task.toml"].decode()
    assert sorted(f.path for f in version.files.all()) == [
        "bad/no_max.py",
        "reference.py",
        "solution.py",
        "statement.md",
    ]
    assert [c.key for c in version.rubric.criteria.all()] == ["correct", "speedup-2x", "clarity"]
    negative = version.files.get(path="bad/no_max.py")
    assert (negative.role, negative.expected_verdict) == ("negative", "wrong_answer")


def test_the_bundle_hash_is_the_version_hash(bundle_dir):
    bundle = load_bundle(bundle_dir)
    run("import_tasks", str(bundle_dir))
    task = Task.objects.get(slug=SLUG)
    expected = services.content_hash(bundle.hash_manifest(), bundle.file_data())
    assert current(task).content_hash == expected == services.task_draft_hash(task)


def test_import_then_export_round_trips_byte_for_byte(bundle_dir, tmp_path):
    run("import_tasks", str(bundle_dir))
    run("export_task", SLUG, str(tmp_path / "out"))
    assert read_tree(tmp_path / "out") == read_tree(bundle_dir)
    run("export_task", SLUG, str(tmp_path / "v1"), "--version", "1")
    assert read_tree(tmp_path / "v1") == read_tree(bundle_dir)


def test_a_second_import_of_the_same_content_creates_no_rows(bundle_dir):
    run("import_tasks", str(bundle_dir))
    before = counts()
    draft_ids = sorted(TaskFile.objects.filter(task__slug=SLUG).values_list("pk", flat=True))
    updated_at = Task.objects.get(slug=SLUG).updated_at
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: unchanged (version 1)\n"
    assert counts() == before
    assert sorted(TaskFile.objects.filter(task__slug=SLUG).values_list("pk", flat=True)) == (
        draft_ids
    )
    assert Task.objects.get(slug=SLUG).updated_at == updated_at


def test_a_changed_file_makes_version_2_and_leaves_version_1_intact(bundle_dir):
    run("import_tasks", str(bundle_dir))
    v1 = TaskVersion.objects.get(task__slug=SLUG, number=1)
    v1_files = {f.path: (f.content, f.sha256) for f in v1.files.all()}
    (bundle_dir / "solution.py").write_text("# faster\n")
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: new version 2\n"
    task = Task.objects.get(slug=SLUG)
    assert (task.status, current(task).number) == ("published", 2)
    assert current(task).files.get(path="solution.py").content == "# faster\n"
    v1_again = TaskVersion.objects.get(pk=v1.pk)
    assert v1_again.content_hash == v1.content_hash
    assert {f.path: (f.content, f.sha256) for f in v1_again.files.all()} == v1_files
    assert v1_files["solution.py"][0] == valid_files()["solution.py"].decode()


def test_reverting_the_content_makes_version_1_current_again(bundle_dir):
    run("import_tasks", str(bundle_dir))
    original = (bundle_dir / "solution.py").read_bytes()
    (bundle_dir / "solution.py").write_text("# faster\n")
    run("import_tasks", str(bundle_dir))
    (bundle_dir / "solution.py").write_bytes(original)
    before = counts()
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: published existing version 1\n"
    assert counts() == before
    task = Task.objects.get(slug=SLUG)
    assert (task.status, current(task).number) == ("published", 1)


def test_a_changed_manifest_field_makes_a_new_version(bundle_dir):
    run("import_tasks", str(bundle_dir))
    files = valid_files()
    edit(files, 'difficulty = "medium"', 'difficulty = "hard"')
    write_bundle(bundle_dir, files)
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: new version 2\n"
    assert current(Task.objects.get(slug=SLUG)).difficulty == "hard"


def test_draft_import_freezes_a_version_but_publishes_nothing(bundle_dir):
    out, _ = run("import_tasks", str(bundle_dir), "--draft")
    assert out == f"{SLUG}: created task, version 1, draft\n"
    task = Task.objects.get(slug=SLUG)
    assert (task.status, task.current_version) == ("draft", None)
    assert task.versions.count() == 1


def test_a_retired_task_is_not_brought_back(bundle_dir):
    run("import_tasks", str(bundle_dir))
    task = Task.objects.get(slug=SLUG)
    services.task_retire(task=task, user=task.owner)
    (bundle_dir / "solution.py").write_text("# faster\n")
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: new version 2, retired\n"
    task.refresh_from_db()
    assert (task.status, current(task).number) == ("retired", 1)


def test_a_task_in_review_is_published_by_the_import(bundle_dir):
    run("import_tasks", str(bundle_dir), "--draft")
    task = Task.objects.get(slug=SLUG)
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=task.owner)
    out, _ = run("import_tasks", str(bundle_dir))
    assert out == f"{SLUG}: published existing version 1\n"
    task.refresh_from_db()
    assert (task.status, current(task).number) == ("published", 1)


def test_another_authors_task_is_not_overwritten(bundle_dir, author, colleague):
    bundle = load_bundle(bundle_dir)
    services.bundle_import(
        bundle=bundle, user=factories.make_user(roles.ADMIN, username="boss"), publish=False
    )
    Task.objects.filter(slug=SLUG).update(owner=author)
    (bundle_dir / "solution.py").write_text("# mine now\n")
    before = counts()
    message = refused("import_tasks", str(bundle_dir), "--draft", "--user", colleague.username)
    assert f"task {SLUG} belongs to author" in message
    assert counts() == before
    assert "# mine now" not in Task.objects.get(slug=SLUG).files.get(path="solution.py").content


def test_an_admin_may_overwrite_another_authors_task(bundle_dir, author, admin_user):
    services.bundle_import(bundle=load_bundle(bundle_dir), user=admin_user, publish=False)
    Task.objects.filter(slug=SLUG).update(owner=author)
    (bundle_dir / "solution.py").write_text("# revised\n")
    out, _ = run("import_tasks", str(bundle_dir), "--user", "admin")
    assert out == f"{SLUG}: new version 2\n"
    task = Task.objects.get(slug=SLUG)
    assert task.owner == author
    assert current(task).created_by == admin_user


def test_an_author_cannot_publish_their_own_import(bundle_dir, author):
    reviewer_author = factories.make_user(roles.AUTHOR, roles.REVIEWER, username="both")
    message = refused("import_tasks", str(bundle_dir), "--user", reviewer_author.username)
    assert "authors cannot approve their own tasks" in message
    message = refused("import_tasks", str(bundle_dir), "--user", author.username)
    assert "cannot publish (not a reviewer)" in message
    assert counts()["Task"] == 0
    run("import_tasks", str(bundle_dir), "--user", author.username, "--draft")
    assert Task.objects.get(slug=SLUG).owner == author


# A file and a folder cannot share a name on disk: that case is checked in memory only.
ON_DISK = [case for case in MALFORMED if case.id != "file-and-folder"]


@pytest.mark.parametrize(("mutate", "path", "field"), ON_DISK)
def test_a_malformed_bundle_is_refused_and_nothing_changes(bundle_dir, mutate, path, field):
    run("import_tasks", str(bundle_dir))
    before = counts()
    task_before = Task.objects.values().get(slug=SLUG)
    bad = bundle_dir.parent.parent / "bad" / SLUG
    write_bundle(bad, broken(mutate))
    message = refused("import_tasks", str(bad))
    where = f"{SLUG}/{path}: {field}: " if field else f"{SLUG}/{path}: "
    assert where in message
    assert "nothing was imported" in message
    assert counts() == before
    assert Task.objects.values().get(slug=SLUG) == task_before


def test_one_bad_bundle_refuses_them_all_and_every_error_is_printed(tmp_path):
    catalog = tmp_path / "catalog"
    good = valid_files()
    edit(good, '"row-softmax"', '"good-one"')
    write_bundle(catalog / "good-one", good)
    bad_kind = valid_files()
    edit(bad_kind, '"row-softmax"', '"bad-kind"')
    edit(bad_kind, 'kind = "kernel"', 'kind = "kernal"')
    write_bundle(catalog / "bad-kind", bad_kind)
    bad_path = valid_files()
    edit(bad_path, '"row-softmax"', '"bad-path"')
    edit(bad_path, 'path = "solution.py"', 'path = "../solution.py"')
    write_bundle(catalog / "bad-path", bad_path)
    message = refused("import_tasks", str(catalog))
    assert "bad-kind/task.toml: kind: 'kernal' is not one of" in message
    assert "bad-path/task.toml: files[2].path: '../solution.py' has an empty" in message
    assert "3 bundle(s): nothing was imported" in message
    assert counts() == dict.fromkeys(counts(), 0)


def test_two_bundles_with_one_slug_are_refused(tmp_path):
    write_bundle(tmp_path / "catalog" / "a", valid_files())
    write_bundle(tmp_path / "catalog" / "b", valid_files())
    message = refused("import_tasks", str(tmp_path / "catalog"))
    assert f"slug '{SLUG}' is also used by" in message
    assert Task.objects.count() == 0


def test_a_folder_of_bundles_imports_each_and_skips_other_folders(tmp_path):
    first = valid_files()
    second = valid_files()
    edit(second, '"row-softmax"', '"second-task"')
    write_bundle(tmp_path / "catalog" / "first", first)
    write_bundle(tmp_path / "catalog" / "second", second)
    (tmp_path / "catalog" / "unfinished").mkdir()
    out, err = run("import_tasks", str(tmp_path / "catalog"))
    assert out == f"{SLUG}: created task, version 1\nsecond-task: created task, version 1\n"
    assert "skipped" in err and "unfinished: no task.toml" in err


def test_a_missing_path_is_an_error(tmp_path):
    assert "is not a folder" in refused("import_tasks", str(tmp_path / "nowhere"))


def test_a_failure_inside_the_import_leaves_nothing_behind(bundle_dir):
    bundle = load_bundle(bundle_dir)
    # Past validation, the database still refuses a negative without its verdict: the
    # task row is written first, then the files fail, and all of it rolls back.
    files = tuple(
        dataclasses.replace(f, expected_verdict="") if f.role == "negative" else f
        for f in bundle.files
    )
    admin = factories.make_user(roles.ADMIN)
    with pytest.raises(IntegrityError):
        services.bundle_import(bundle=dataclasses.replace(bundle, files=files), user=admin)
    assert counts() == dict.fromkeys(counts(), 0)


def _full_grading() -> dict:
    return tomllib.loads(valid_files()["task.toml"].decode())["grading"]


def test_a_browser_draft_exports_to_toml_with_the_same_content_hash():
    task = factories.make_task(grading=_full_grading())
    rendered = services.bundle_render(task=task)
    assert b"reference.py" in rendered["task.toml"]
    bundle = parse_bundle(rendered, name=task.slug)
    assert services.content_hash(bundle.hash_manifest(), bundle.file_data()) == (
        services.task_draft_hash(task)
    )
    result = services.bundle_import(bundle=bundle, user=factories.make_user(roles.ADMIN))
    assert (result.draft_changed, result.version_created) == (False, True)


def test_a_version_frozen_without_manifest_exports_generated_toml(tmp_path):
    task = factories.make_published_task(grading=_full_grading())
    version = current(task)
    # Never imported: the text was generated when the version was frozen, and kept.
    assert version.manifest == tomli_w.dumps(services.version_manifest(version))
    run("export_task", task.slug, str(tmp_path / "out"), "--version", "1")
    bundle = load_bundle(tmp_path / "out")
    assert services.content_hash(bundle.hash_manifest(), bundle.file_data()) == (
        version.content_hash
    )
    out, _ = run("import_tasks", str(tmp_path / "out"))
    assert out == f"{task.slug}: unchanged (version 1)\n"


def test_export_of_a_draft_exports_its_current_content(bundle_dir, tmp_path):
    run("import_tasks", str(bundle_dir))
    task = Task.objects.get(slug=SLUG)
    services.task_revise(task=task, user=task.owner)
    TaskFile.objects.filter(task=task, path="solution.py").delete()
    TaskFile.objects.create(task=task, path="solution.py", content="# wip\n", role="solution")
    out, err = run("export_task", SLUG, str(tmp_path / "draft"))
    assert out.startswith(f"{SLUG}: wrote draft to")
    exported = read_tree(tmp_path / "draft")
    assert exported["solution.py"] == b"# wip\n"
    # Only a file's content changed: task.toml is the imported text, comments and all.
    assert exported["task.toml"] == valid_files()["task.toml"]
    assert err == ""
    assert load_bundle(tmp_path / "draft").files != load_bundle(bundle_dir).files


def test_an_export_that_would_not_import_says_why(tmp_path):
    task = factories.make_task(grading={})  # a kernel task needs a [grading] table
    _, err = run("export_task", task.slug, str(tmp_path / "out"))
    assert "will not import" in err and "task.toml: grading: is required" in err


def test_export_refuses_an_unsafe_path_from_the_database(tmp_path):
    task = factories.make_task()
    TaskFile.objects.create(task=task, path="../escaped.py", content="x", role="other")
    message = refused("export_task", task.slug, str(tmp_path / "out"))
    assert "refusing to write '../escaped.py'" in message
    assert not (tmp_path / "escaped.py").exists()


def test_export_into_a_non_empty_folder_needs_replace(bundle_dir, tmp_path):
    run("import_tasks", str(bundle_dir))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "keep.txt").write_text("mine")
    assert "is not empty" in refused("export_task", SLUG, str(out_dir))
    assert "holds no task.toml" in refused("export_task", SLUG, str(out_dir), "--replace")
    assert (out_dir / "keep.txt").read_text() == "mine"
    run("export_task", SLUG, str(tmp_path / "again"))
    (tmp_path / "again" / "stale.py").write_text("old")
    run("export_task", SLUG, str(tmp_path / "again"), "--replace")
    assert read_tree(tmp_path / "again") == read_tree(bundle_dir)


def test_export_of_an_old_version(bundle_dir, tmp_path):
    run("import_tasks", str(bundle_dir))
    original = read_tree(bundle_dir)
    (bundle_dir / "solution.py").write_text("# v2\n")
    run("import_tasks", str(bundle_dir))
    run("export_task", SLUG, str(tmp_path / "v1"), "--version", "1")
    assert read_tree(tmp_path / "v1") == original
    assert "has no version 3" in refused("export_task", SLUG, str(tmp_path / "x"), "--version", "3")
    assert "no task 'nope'" in refused("export_task", "nope", str(tmp_path / "y"))


def test_create_demo_users_gives_each_role_a_login():
    out, _ = run("create_demo_users")
    out_again, _ = run("create_demo_users")
    assert out == out_again
    users = get_user_model().objects
    assert users.count() == 4
    for username, role in [
        ("author", roles.AUTHOR),
        ("reviewer", roles.REVIEWER),
        ("client", roles.API_CLIENT),
        ("admin", roles.ADMIN),
    ]:
        user = users.get(username=username)
        password = next(line.split()[1] for line in out.splitlines() if line.split()[0] == username)
        assert user.check_password(password)
        assert list(user.groups.values_list("name", flat=True)) == [role]
    assert not roles.has_role(users.get(username="author"), roles.REVIEWER)
    assert roles.is_admin(users.get(username="admin"))


@override_settings(PRODUCTION=True)
def test_create_demo_users_refuses_in_production():
    assert "production" in refused("create_demo_users")
    assert get_user_model().objects.count() == 0


def test_the_catalog_account_must_be_an_admin(bundle_dir):
    factories.make_user(roles.AUTHOR, username="catalog")
    assert "is not an admin" in refused("import_tasks", str(bundle_dir))
    assert "no user named 'ghost'" in refused("import_tasks", str(bundle_dir), "--user", "ghost")
    assert Task.objects.count() == 0


def test_a_task_owned_by_its_importer_keeps_status_on_draft_import(bundle_dir):
    run("import_tasks", str(bundle_dir))
    (bundle_dir / "solution.py").write_text("# v2\n")
    out, _ = run("import_tasks", str(bundle_dir), "--draft")
    assert out == f"{SLUG}: new version 2, not published (version 1 is)\n"
    task = Task.objects.get(slug=SLUG)
    assert (task.status, current(task).number) == (TaskStatus.PUBLISHED, 1)
