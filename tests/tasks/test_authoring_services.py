"""Authoring services: creating and editing drafts, grading settings, the rubric,
bundle zips and task reviews, each checked for the owner, a colleague, an outsider,
a reviewer and an admin."""

from __future__ import annotations

import io
import stat
import struct
import zipfile
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from benchwright import roles
from graders import registry
from graders.contract import GradingTableError
from rubrics.models import Criterion, Rubric
from tasks import services
from tasks.bundle import MAX_FILE_BYTES, BundleInvalid
from tasks.models import (
    FileRole,
    ReviewDecision,
    Task,
    TaskFile,
    TaskReviewComment,
    TaskStatus,
    ValidationStatus,
    Visibility,
)
from tests import factories

pytestmark = pytest.mark.django_db

SOLUTION = factories.REFERENCE.replace("class Model(", "class ModelNew(")
NEGATIVE = SOLUTION.replace("torch.relu(x)", "x")


def complete_task(owner, **fields) -> Task:
    """A draft that passes the bundle check: statement, reference, solution, a negative."""
    task = factories.make_task(owner, **fields)
    TaskFile.objects.create(task=task, path="solution.py", content=SOLUTION, role=FileRole.SOLUTION)
    TaskFile.objects.create(
        task=task,
        path="bad/identity.py",
        content=NEGATIVE,
        role=FileRole.NEGATIVE,
        expected_verdict="wrong_answer",
        note="returns its input",
    )
    return task


def in_review(owner) -> Task:
    task = complete_task(owner)
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=owner)
    task.refresh_from_db()
    return task


def errors_of(caught: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return caught.value.message_dict


def new_task(user, **overrides) -> Task:
    values: dict[str, Any] = {
        "slug": "relu-64",
        "title": "ReLU on 64 elements",
        "kind": "kernel",
        "difficulty": "easy",
        "hardware": "cpu",
        "tags": ["relu", " pytorch ", "relu"],
    }
    values.update(overrides)
    return services.task_create(user=user, **values)


# Creating and describing a draft -------------------------------------------------------------


def test_an_author_creates_a_kernel_draft_with_a_statement_rubric_and_default_grading(author):
    task = new_task(author)

    assert task.owner == author
    assert task.status == TaskStatus.DRAFT
    assert task.tags == ["relu", "pytorch"]
    assert task.grading == registry.get("kernel").default_grading()
    statement = task.files.get()
    assert (statement.path, statement.role, statement.visibility) == (
        "statement.md",
        FileRole.STATEMENT,
        Visibility.PROMPT,
    )
    assert task.statement == statement.content == "# ReLU on 64 elements\n"
    assert Rubric.objects.filter(task=task).exists()


def test_a_draft_starts_with_its_kinds_default_grading_table(author, text_answer):
    assert new_task(author, kind="text-answer").grading == {"key": "key.txt"}
    assert new_task(author, slug="relu-65").grading == registry.get("kernel").default_grading()


@pytest.mark.parametrize("who", ["outsider", "reviewer"])
def test_only_authors_create_tasks(request, who):
    with pytest.raises(services.PermissionDenied):
        new_task(request.getfixturevalue(who))
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"slug": "Bad Slug"}, "slug"),
        ({"slug": "ab"}, "slug"),
        ({"title": "   "}, "title"),
        ({"kind": "cooking"}, "kind"),
        ({"hardware": "tpu"}, "hardware"),
        ({"tags": ["x" * 51]}, "tags"),
    ],
)
def test_bad_metadata_is_refused_with_the_field_named(author, overrides, field):
    with pytest.raises(ValidationError) as caught:
        new_task(author, **overrides)
    assert field in errors_of(caught)
    assert not Task.objects.exists()


def test_a_taken_slug_is_refused(author, colleague):
    factories.make_task(colleague, slug="relu-64")
    with pytest.raises(ValidationError) as caught:
        new_task(author)
    assert "is taken" in errors_of(caught)["slug"][0]


def test_the_owner_updates_metadata_and_kind_kernel_gains_default_grading(author, text_answer):
    task = new_task(author, kind="text-answer")
    services.task_update_metadata(
        task=task, user=author, title="New", kind="kernel", difficulty="hard",
        hardware="h100", tags=["a"],
    )  # fmt: skip
    task.refresh_from_db()
    assert (task.title, task.kind, task.hardware, task.tags) == ("New", "kernel", "h100", ["a"])
    assert task.grading == registry.get("kernel").default_grading()


@pytest.mark.parametrize("who", ["colleague", "outsider", "reviewer"])
def test_only_the_owner_or_an_admin_edits_a_draft(request, author, who):
    task = factories.make_task(author)
    with pytest.raises(services.PermissionDenied):
        services.task_statement_update(task=task, user=request.getfixturevalue(who), text="x")
    task.refresh_from_db()
    assert task.statement == "Compute **relu**."


def test_an_admin_edits_anyones_draft(author, admin_user):
    task = factories.make_task(author)
    services.task_statement_update(task=task, user=admin_user, text="# By admin\n")
    assert task.files.get(role=FileRole.STATEMENT).content == "# By admin\n"


def test_a_draft_in_review_is_not_editable_even_by_its_owner(author):
    task = in_review(author)
    with pytest.raises(services.PermissionDenied):
        services.task_statement_update(task=task, user=author, text="late change")


def test_the_statement_updates_its_file_and_the_task_mirror(author):
    task = factories.make_task(author)
    services.task_statement_update(task=task, user=author, text="# ReLU\n\nDo it.\n")
    task.refresh_from_db()
    assert task.statement == "# ReLU\n\nDo it.\n"
    assert task.files.get(role=FileRole.STATEMENT).content == task.statement


# Files -----------------------------------------------------------------------------------


def save(task, user, path="solution.py", **fields):
    values: dict[str, Any] = {
        "content": SOLUTION,
        "visibility": Visibility.HIDDEN,
        "role": FileRole.SOLUTION,
        "expected_verdict": "",
        "note": "",
    }
    values.update(fields)
    return services.task_file_save(task=task, user=user, path=path, **values)


def test_the_owner_adds_and_edits_a_file(author):
    task = factories.make_task(author)
    file = save(task, author)
    assert file.sha256 and file.task == task

    services.task_file_save(
        task=task, user=author, file=file, content="# v2\n", visibility="hidden",
        role="solution",
    )  # fmt: skip
    file.refresh_from_db()
    assert file.content == "# v2\n"
    assert file.path == "solution.py"


@pytest.mark.parametrize(
    ("path", "fields", "field"),
    [
        ("../escape.py", {}, "path"),
        ("/abs.py", {}, "path"),
        ("a\\b.py", {}, "path"),
        ("REFERENCE.py", {}, "path"),  # the same path as reference.py, ignoring case
        ("solution.py", {"visibility": "prompt"}, "visibility"),
        ("bad/x.py", {"role": "negative"}, "expected_verdict"),
        ("bad/x.py", {"role": "negative", "expected_verdict": "nope"}, "expected_verdict"),
        ("test.py", {"role": "test", "expected_verdict": "accepted"}, "expected_verdict"),
        ("big.py", {"content": "x" * (MAX_FILE_BYTES + 1)}, "content"),
    ],
)
def test_file_problems_are_refused_with_the_field_named(author, path, fields, field):
    task = factories.make_task(author)
    before = task.files.count()
    with pytest.raises(ValidationError) as caught:
        save(task, author, path=path, **fields)
    assert field in errors_of(caught), errors_of(caught)
    assert task.files.count() == before


def test_a_second_statement_is_refused(author):
    task = factories.make_task(author)
    with pytest.raises(ValidationError) as caught:
        save(task, author, path="other.md", role="statement", visibility="prompt")
    assert "only one file may have role statement" in str(caught.value)


def test_an_older_problem_of_the_draft_does_not_block_other_files(author):
    task = factories.make_task(author)
    # Written behind the services' back: a path that is a file and a folder.
    TaskFile.objects.create(task=task, path="bad", content="")
    TaskFile.objects.create(task=task, path="bad/x.py", content="")
    assert save(task, author).path == "solution.py"


def test_the_statement_file_keeps_its_role_and_mirrors_its_text(author):
    task = factories.make_task(author)
    statement = task.files.get(role=FileRole.STATEMENT)
    with pytest.raises(ValidationError):
        services.task_file_save(
            task=task, user=author, file=statement, content="x", visibility="hidden",
            role="other",
        )  # fmt: skip
    services.task_file_save(
        task=task, user=author, file=statement, content="# New\n", visibility="prompt",
        role="statement",
    )  # fmt: skip
    task.refresh_from_db()
    assert task.statement == "# New\n"


def test_rename_checks_the_new_path(author):
    task = factories.make_task(author)
    file = save(task, author)
    services.task_file_rename(file=file, user=author, new_path="sol/best.py")
    assert task.files.filter(path="sol/best.py").exists()
    save(task, author, path="lib/util.py", role="other")

    for bad in ("reference.py", "../x.py", "lib"):
        with pytest.raises(ValidationError) as caught:
            services.task_file_rename(file=file, user=author, new_path=bad)
        assert "path" in errors_of(caught)
    file.refresh_from_db()
    assert file.path == "sol/best.py"


def test_a_colleague_cannot_rename_or_delete(author, colleague):
    task = factories.make_task(author)
    file = save(task, author)
    with pytest.raises(services.PermissionDenied):
        services.task_file_rename(file=file, user=colleague, new_path="x.py")
    with pytest.raises(services.PermissionDenied):
        services.task_file_delete(file=file, user=colleague)
    assert task.files.filter(path="solution.py").exists()


def test_delete_removes_a_file_but_never_the_statement(author):
    task = factories.make_task(author)
    file = save(task, author)
    services.task_file_delete(file=file, user=author)
    assert not task.files.filter(path="solution.py").exists()
    with pytest.raises(ValidationError):
        services.task_file_delete(file=task.files.get(role=FileRole.STATEMENT), user=author)


@pytest.mark.parametrize(("data", "why"), [(b"\xff\xfe", "UTF-8"), (b"a\x00b", "NUL")])
def test_uploads_must_be_text(data, why):
    with pytest.raises(ValidationError) as caught:
        services.task_file_from_upload(data, name="trace.json")
    assert why in str(caught.value)
    assert services.task_file_from_upload(b'{"traceEvents": []}') == '{"traceEvents": []}'


# Grading settings ----------------------------------------------------------------------------

GRADING = {"format": "kernelbench", "language": "pytorch", "trials": 5}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"trials": 3}, "grading.trials"),
        ({"format": "mystery"}, "grading.format"),
        ({"tolerances": {"float16": {"atol": -1, "rtol": 0}}}, "grading.tolerances.float16.atol"),
        ({"tolerances": {"float16": {"atol": 1e-3}}}, "grading.tolerances.float16.rtol"),
        ({"timing": {"min_batches": 9, "max_batches": 3}}, "grading.timing.max_batches"),
        ({"shapes": [{"name": "a", "dim": {"x": 1}}]}, "grading.shapes[0].dim"),
        ({"extra": 1}, "grading.extra"),
    ],
)
def test_grading_errors_name_the_field(author, change, field):
    task = factories.make_task(author)
    with pytest.raises(GradingTableError) as caught:
        services.task_grading_update(task=task, user=author, grading={**GRADING, **change})
    assert caught.value.field == field
    task.refresh_from_db()
    assert task.grading == GRADING


def test_grading_is_checked_even_before_the_draft_has_a_reference(author):
    task = new_task(author)
    with pytest.raises(GradingTableError):
        services.task_grading_update(task=task, user=author, grading={**GRADING, "trials": 1})
    grading = {**GRADING, "shapes": [{"name": "tiny", "dim": 8}], "timing": {"max_batches": 5}}
    services.task_grading_update(task=task, user=author, grading=grading)
    task.refresh_from_db()
    assert task.grading == grading


def test_grading_settings_are_checked_by_the_tasks_kind_for_its_editors(
    author, colleague, text_answer
):
    task = factories.make_task(author)
    with pytest.raises(services.PermissionDenied):
        services.task_grading_update(task=task, user=colleague, grading=GRADING)
    answer = new_task(author, slug="answer-it", kind="text-answer")
    with pytest.raises(GradingTableError) as caught:  # a kernel table means nothing to it
        services.task_grading_update(task=answer, user=author, grading=GRADING)
    assert (caught.value.field, caught.value.message) == ("grading.key", "must name a listed file")
    answer.refresh_from_db()
    assert answer.grading == {"key": "key.txt"}


# Rubric -------------------------------------------------------------------------------------


def add(task, user, **fields):
    values: dict[str, Any] = {
        "key": "fast",
        "title": "Fast",
        "points": 2,
        "kind": "automatic",
        "rule": {"type": "speedup", "at_least": 1.5},
    }
    values.update(fields)
    return services.rubric_criterion_add(task=task, user=user, **values)


def keys(task) -> list[str]:
    return list(
        Criterion.objects.filter(rubric__task=task)
        .order_by("position")
        .values_list("key", flat=True)
    )


def test_criteria_are_added_in_order_and_a_draft_without_rubric_gets_one(author):
    task = factories.make_task(author)
    Rubric.objects.filter(task=task).delete()
    add(task, author, key="correct", rule={"type": "verdict", "equals": "accepted"})
    add(task, author)
    add(
        task, author, key="clarity", kind="human", points=2, rule=None,
        levels=[{"score": 0, "descriptor": "Unclear"}, {"score": 2, "descriptor": "Clear"}],
    )  # fmt: skip
    add(task, author, key="cheat", points=-3, rule={"type": "integrity", "clean": False})
    assert keys(task) == ["correct", "fast", "clarity", "cheat"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"key": "correct"}, "key"),  # taken
        ({"key": "Bad Id"}, "key"),
        ({"points": 0}, "points"),
        ({"title": ""}, "title"),
        ({"rule": {"type": "speedup", "at_least": 0}}, "rule"),
        ({"rule": {"type": "verdict", "equals": "great"}}, "rule"),
        ({"kind": "human", "levels": []}, "levels"),
        ({"kind": "human", "levels": [{"score": 9, "descriptor": "x"}]}, "levels"),
    ],
)
def test_bad_criteria_are_refused_with_the_field_named(author, fields, field):
    task = factories.make_task(author)
    with pytest.raises(ValidationError) as caught:
        add(task, author, **fields)
    assert field in errors_of(caught), errors_of(caught)
    assert keys(task) == ["correct", "clarity"]


def test_criteria_move_update_and_delete(author):
    task = factories.make_task(author)
    fast = add(task, author)
    services.rubric_criterion_move(criterion=fast, user=author, offset=-1)
    assert keys(task) == ["correct", "fast", "clarity"]
    services.rubric_criterion_move(criterion=fast, user=author, offset=-5)
    assert keys(task) == ["fast", "correct", "clarity"]

    services.rubric_criterion_update(
        criterion=fast, user=author, key="faster", title="Faster", points=3, kind="automatic",
        rule={"type": "speedup", "at_least": 2},
    )  # fmt: skip
    fast.refresh_from_db()
    assert (fast.key, fast.points, fast.rule["at_least"]) == ("faster", 3, 2)

    services.rubric_criterion_delete(criterion=fast, user=author)
    assert keys(task) == ["correct", "clarity"]
    positions = Criterion.objects.filter(rubric__task=task).values_list("position", flat=True)
    assert sorted(positions) == [0, 1]


def test_a_colleague_cannot_touch_the_rubric(author, colleague):
    task = factories.make_task(author)
    criterion = Criterion.objects.get(rubric__task=task, key="correct")
    with pytest.raises(services.PermissionDenied):
        add(task, colleague)
    with pytest.raises(services.PermissionDenied):
        services.rubric_criterion_delete(criterion=criterion, user=colleague)
    assert keys(task) == ["correct", "clarity"]


# Checking and validating -------------------------------------------------------------------


def test_the_bundle_check_lists_what_a_new_kernel_draft_lacks(author):
    problems = services.draft_problems(new_task(author))
    assert any("exactly one file with role reference" in p.message for p in problems)
    assert services.draft_problems(complete_task(author)) == []


def test_validate_refuses_an_invalid_draft_and_reuses_a_running_run(author):
    with pytest.raises(services.DraftInvalid):
        services.task_validate(task=new_task(author), user=author)

    task = complete_task(author)
    run = services.task_validate(task=task, user=author)
    assert run.status == ValidationStatus.RUNNING
    assert services.task_validate(task=task, user=author) == run
    assert {r.path for r in run.results.all()} == {"solution.py", "bad/identity.py"}


# Bundle zips -------------------------------------------------------------------------------


def zip_of(files: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def exported(task: Task) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(services.bundle_zip_build(task=task))) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def test_a_downloaded_zip_imports_again_as_a_draft(author, colleague):
    task = complete_task(author, slug="relu-zip")
    files = exported(task)
    assert "relu-zip/task.toml" in files and "relu-zip/bad/identity.py" in files
    Task.objects.filter(pk=task.pk).delete()

    result = services.bundle_zip_import(data=zip_of(files), filename="relu-zip.zip", user=colleague)

    assert result.task.owner == colleague
    assert result.task.status == TaskStatus.DRAFT
    assert result.task.current_version is None
    assert services.draft_problems(result.task) == []
    assert result.task.files.get(path="solution.py").content == SOLUTION


def test_importing_over_own_draft_replaces_it_and_never_over_others(author, colleague):
    task = complete_task(author, slug="relu-zip")
    files = {k.split("/", 1)[1]: v for k, v in exported(task).items()}
    files["solution.py"] = SOLUTION.encode() + b"# improved\n"

    services.bundle_zip_import(data=zip_of(files), filename="b.zip", user=author)
    assert task.files.get(path="solution.py").content.endswith("# improved\n")

    with pytest.raises(services.PermissionDenied):
        services.bundle_zip_import(data=zip_of(files), filename="b.zip", user=colleague)


def test_importing_over_a_task_in_review_is_refused(author):
    task = in_review(author)
    files = {k.split("/", 1)[1]: v for k, v in exported(task).items()}
    with pytest.raises(services.PermissionDenied) as caught:
        services.bundle_zip_import(data=zip_of(files), filename="b.zip", user=author)
    assert "only a draft" in str(caught.value)


def test_only_authors_import(outsider):
    with pytest.raises(services.PermissionDenied):
        services.bundle_zip_import(data=b"", filename="b.zip", user=outsider)


def problems(data: bytes) -> list[str]:
    with pytest.raises(BundleInvalid) as caught:
        services.bundle_zip_read(data, name="up")
    return [str(e) for e in caught.value.errors]


def test_unsafe_zips_are_refused_with_every_entry_named(author):
    assert "not a zip file" in problems(b"plain text")[0]
    found = problems(zip_of({"task.toml": b"", "../evil.py": b"x"}, symlink="link.py"))
    assert any("up/link.py: is a symbolic link" in p for p in found)

    found = problems(zip_of({"task.toml": b"", "../evil.py": b"x", "a//b.py": b""}))
    assert any("up/../evil.py" in p and "'..'" in p for p in found)
    assert any("up/a//b.py" in p for p in found)

    many = {f"f{i}.py": b"" for i in range(205)}
    assert any("holds over 200 files" in p for p in problems(zip_of(many)))


def test_a_zip_bomb_is_stopped_at_the_size_cap_without_trusting_the_header():
    big = zip_of({"task.toml": b"", "big.py": b"\0" * (MAX_FILE_BYTES * 2)})
    assert any("big.py: is larger than" in p for p in problems(big))

    # The same archive with the declared sizes rewritten to 10 bytes: never more than
    # the cap is inflated, and the entry that does not match its checksum is refused.
    lying = bytearray(big)
    for signature, size_at, length_at, name_at in (
        (b"PK\x03\x04", 22, 26, 30),
        (b"PK\x01\x02", 24, 28, 46),
    ):
        start = 0
        while (start := lying.find(signature, start)) != -1:
            length = struct.unpack_from("<H", lying, start + length_at)[0]
            if lying[start + name_at : start + name_at + length] == b"big.py":
                struct.pack_into("<I", lying, start + size_at, 10)
            start += 4
    with zipfile.ZipFile(io.BytesIO(bytes(lying))) as archive:
        assert archive.getinfo("big.py").file_size == 10
    assert any(p.startswith("up/big.py: cannot be read") for p in problems(bytes(lying)))


def test_a_folder_around_the_bundle_and_archive_metadata_are_ignored(author):
    task = complete_task(author, slug="relu-zip")
    files = exported(task)
    files["__MACOSX/relu-zip/._task.toml"] = b"\0\0"
    files["relu-zip/__pycache__/x.pyc"] = b"\0"
    read = services.bundle_zip_read(zip_of(files), name="up")
    assert set(read) == {
        "task.toml",
        "statement.md",
        "reference.py",
        "solution.py",
        "bad/identity.py",
    }


def test_an_invalid_bundle_lists_every_problem_with_file_and_field(author):
    task = complete_task(author, slug="relu-zip")
    files = {k.split("/", 1)[1]: v for k, v in exported(task).items()}
    files["task.toml"] = files["task.toml"].replace(
        b'visibility = "hidden"', b'visibility = "secret"', 1
    )
    files["stray.py"] = b""
    with pytest.raises(BundleInvalid) as caught:
        services.bundle_zip_import(data=zip_of(files), filename="up.zip", user=author)
    text = [str(e) for e in caught.value.errors]
    assert any("up/task.toml: files[" in t and ".visibility" in t for t in text)
    assert any("stray.py is in the bundle but not listed" in t for t in text)


# Task review --------------------------------------------------------------------------------


def test_a_reviewer_comments_on_lines_of_a_task_in_review(author, reviewer):
    task = in_review(author)
    comment = services.task_review_comment_add(
        task=task, reviewer=reviewer, path="solution.py", line=9, body="Why relu here?"
    )
    assert comment.line_text == "    def forward(self, x):"
    assert comment.review is None

    for path, line in (("nope.py", 1), ("solution.py", 999)):
        with pytest.raises(ValidationError):
            services.task_review_comment_add(
                task=task, reviewer=reviewer, path=path, line=line, body="x"
            )


@pytest.mark.parametrize("who", ["author", "colleague", "outsider"])
def test_only_reviewers_other_than_the_author_comment_and_decide(request, author, who):
    task = in_review(author)
    user = request.getfixturevalue(who)
    with pytest.raises(services.PermissionDenied):
        services.task_review_comment_add(
            task=task, reviewer=user, path="solution.py", line=1, body="x"
        )
    with pytest.raises(services.PermissionDenied):
        services.task_review_decide(task=task, reviewer=user, decision="approved")
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW


def test_an_author_who_is_also_a_reviewer_cannot_approve_their_own_task(author):
    roles.grant(author, roles.REVIEWER)
    task = in_review(author)
    with pytest.raises(services.PermissionDenied):
        services.task_review_decide(task=task, reviewer=author, decision="approved")


def test_requesting_changes_sends_the_draft_back_with_the_comments(author, reviewer):
    task = in_review(author)
    with pytest.raises(ValidationError):
        services.task_review_decide(task=task, reviewer=reviewer, decision="changes_requested")
    services.task_review_comment_add(
        task=task, reviewer=reviewer, path="solution.py", line=1, body="Import less."
    )

    review = services.task_review_decide(
        task=task, reviewer=reviewer, decision="changes_requested", comment="Close."
    )

    task.refresh_from_db()
    assert task.status == TaskStatus.DRAFT
    assert review.decision == ReviewDecision.CHANGES_REQUESTED
    assert [c.body for c in review.comments.all()] == ["Import less."]
    assert review.files["solution.py"] == SOLUTION
    assert review.content_hash == services.task_draft_hash(task)
    assert "solution.py" in review.manifest


def test_approving_publishes_an_immutable_version(author, reviewer):
    task = in_review(author)
    review = services.task_review_decide(task=task, reviewer=reviewer, decision="approved")
    task.refresh_from_db()
    assert task.status == TaskStatus.PUBLISHED
    assert review.version == task.current_version
    assert review.version is not None and review.version.files.count() == 4


def test_a_pending_comment_is_deleted_only_by_its_author_before_the_decision(author, reviewer):
    other = factories.make_user(roles.REVIEWER, username="other-reviewer")
    task = in_review(author)
    comment = services.task_review_comment_add(
        task=task, reviewer=reviewer, path="solution.py", line=1, body="x"
    )
    with pytest.raises(services.PermissionDenied):
        services.task_review_comment_delete(comment=comment, user=other)
    services.task_review_comment_delete(comment=comment, user=reviewer)
    assert not TaskReviewComment.objects.exists()
