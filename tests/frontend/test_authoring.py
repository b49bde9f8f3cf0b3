"""The task editor through Django's test client: who may open each page, CSRF on
every form, and each form doing what it says with errors beside the fields."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from rubrics.models import Criterion
from tasks import services
from tasks.bundle import MAX_FILE_BYTES
from tasks.models import FileRole, Task, TaskFile, TaskStatus
from tests import factories
from tests.tasks.test_authoring_services import SOLUTION, complete_task, in_review

pytestmark = pytest.mark.django_db

EVERYONE = ["author", "colleague", "outsider", "reviewer", "admin_user"]


def logged_in(user: User, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def html_of(response: Any, status: int = 200) -> str:
    assert response.status_code == status, response.content[:500]
    return response.content.decode()


def field_block(html: str, name: str) -> str:
    """The markup of the field whose input is named ``name`` (label, input, errors)."""
    pattern = (
        r'<div class="field[^"]*"[^>]*>\s*<label[^>]*>[^<]*</label>\s*<[^>]*name="{}".*?</div>'
    )
    match = re.search(pattern.format(name), html, re.S)
    assert match is not None, f"no field {name}"
    return match.group(0)


@pytest.fixture
def draft(author) -> Task:
    return complete_task(author, slug="relu-draft")


def editor_urls(task: Task) -> list[str]:
    file = task.files.get(path="solution.py")
    criterion = Criterion.objects.filter(rubric__task=task).first()
    assert criterion is not None
    return [
        reverse("task-edit", args=[task.slug]),
        reverse("task-file-new", args=[task.slug]),
        reverse("task-file-edit", args=[task.slug, file.pk]),
        reverse("task-grading", args=[task.slug]),
        reverse("task-rubric", args=[task.slug]),
        reverse("task-criterion-edit", args=[task.slug, criterion.pk]),
    ]


# Who may open the editor ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("author", 200),
        ("admin_user", 200),
        ("colleague", 404),
        ("outsider", 404),
        ("reviewer", 404),
    ],
)
def test_only_the_owner_and_admins_open_a_drafts_editor(request, draft, who, status):
    client = logged_in(request.getfixturevalue(who))
    for url in editor_urls(draft):
        assert client.get(url).status_code == status, url


def test_anonymous_users_are_sent_to_log_in(client, draft):
    for url in editor_urls(draft):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_the_owner_of_a_task_in_review_is_sent_to_its_page(author):
    task = in_review(author)
    response = logged_in(author).get(reverse("task-edit", args=[task.slug]))
    assert response.status_code == 302
    assert response["Location"] == reverse("task-detail", args=[task.slug])


def test_a_colleague_cannot_change_a_draft_by_posting(colleague, draft):
    client = logged_in(colleague)
    file = draft.files.get(path="solution.py")
    response = client.post(
        reverse("task-file-edit", args=[draft.slug, file.pk]),
        {"role": "solution", "visibility": "hidden", "content": "stolen"},
    )
    assert response.status_code == 404
    assert client.post(reverse("task-file-delete", args=[draft.slug, file.pk])).status_code == 404
    file.refresh_from_db()
    assert file.content == SOLUTION


def post_endpoints(task: Task) -> list[str]:
    file = task.files.get(path="solution.py")
    criterion = Criterion.objects.filter(rubric__task=task).first()
    assert criterion is not None
    slug = task.slug
    return [
        reverse("task-create"),
        reverse("task-import"),
        reverse("markdown-preview"),
        reverse("task-edit", args=[slug]),
        reverse("task-statement", args=[slug]),
        reverse("task-file-new", args=[slug]),
        reverse("task-file-edit", args=[slug, file.pk]),
        reverse("task-file-rename", args=[slug, file.pk]),
        reverse("task-file-delete", args=[slug, file.pk]),
        reverse("task-grading", args=[slug]),
        reverse("task-rubric", args=[slug]),
        reverse("task-criterion-edit", args=[slug, criterion.pk]),
        reverse("task-criterion-delete", args=[slug, criterion.pk]),
        reverse("task-criterion-move", args=[slug, criterion.pk]),
        reverse("task-validate", args=[slug]),
        reverse("task-submit", args=[slug]),
        reverse("task-revise", args=[slug]),
        reverse("review-comment-add", args=[slug]),
        reverse("review-decide", args=[slug]),
    ]


def test_every_form_refuses_a_post_without_a_csrf_token(author, draft):
    client = logged_in(author, enforce_csrf_checks=True)
    for url in post_endpoints(draft):
        response = client.post(url, {"title": "x", "statement": "x"})
        assert response.status_code == 403, url
    assert draft.files.filter(path="solution.py").exists()
    assert Criterion.objects.filter(rubric__task=draft).count() == 2


def test_forms_carry_a_csrf_token_and_htmx_sends_it_as_a_header(author, draft):
    html = html_of(logged_in(author).get(reverse("task-rubric", args=[draft.slug])))
    forms = re.findall(r'<form method="post".*?</form>', html, re.S)
    assert len(forms) > 5
    assert all('name="csrfmiddlewaretoken"' in form for form in forms)
    assert re.search(r"<body hx-headers='\{\"X-CSRFToken\": \"\w+\"\}'>", html)


# Creating a task ------------------------------------------------------------------------------


def test_an_author_creates_a_task_and_lands_in_its_editor(author):
    client = logged_in(author)
    assert "New task" in html_of(client.get(reverse("task-create")))
    response = client.post(
        reverse("task-create"),
        {
            "slug": "relu-new",
            "title": "ReLU",
            "kind": "kernel",
            "difficulty": "easy",
            "hardware": "cpu",
            "tags": "relu, tiny",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("task-edit", args=["relu-new"])
    task = Task.objects.get(slug="relu-new")
    assert (task.owner, task.tags) == (author, ["relu", "tiny"])


def test_a_bad_slug_is_shown_beside_the_slug_field(author):
    html = html_of(
        logged_in(author).post(
            reverse("task-create"),
            {
                "slug": "No Good",
                "title": "x",
                "kind": "kernel",
                "difficulty": "easy",
                "hardware": "cpu",
            },
        )
    )
    assert "field-error" in field_block(html, "slug")
    assert "must be 3 to 80 characters" in field_block(html, "slug")
    assert not Task.objects.exists()


@pytest.mark.parametrize("who", ["outsider", "reviewer"])
def test_only_authors_may_create_or_import(request, who):
    client = logged_in(request.getfixturevalue(who))
    assert client.get(reverse("task-create")).status_code == 403
    assert client.get(reverse("task-import")).status_code == 403


def test_the_task_list_offers_new_task_and_import_to_authors_only(author, outsider):
    assert reverse("task-create") in html_of(logged_in(author).get(reverse("task-list")))
    assert reverse("task-create") not in html_of(logged_in(outsider).get(reverse("task-list")))


# Overview: details, statement, preview, bundle check --------------------------------------------


def test_the_overview_saves_details_and_lists_the_bundle_check(author):
    task = factories.make_task(author)
    client = logged_in(author)
    html = html_of(client.get(reverse("task-edit", args=[task.slug])))
    assert "The draft is a valid bundle" in html
    response = client.post(
        reverse("task-edit", args=[task.slug]),
        {
            "title": "Renamed",
            "kind": "kernel",
            "difficulty": "hard",
            "hardware": "h100",
            "tags": "",
        },
    )
    assert response.status_code == 302
    task.refresh_from_db()
    assert (task.title, task.difficulty, task.hardware) == ("Renamed", "hard", "h100")


def test_a_new_kernel_draft_shows_what_the_bundle_check_misses(author):
    client = logged_in(author)
    client.post(
        reverse("task-create"),
        {
            "slug": "empty-one",
            "title": "E",
            "kind": "kernel",
            "difficulty": "easy",
            "hardware": "cpu",
        },
    )
    html = html_of(client.get(reverse("task-edit", args=["empty-one"])))
    assert "exactly one file with role reference" in html
    assert re.search(r"<button[^>]*disabled[^>]*>Send to review</button>", html)
    assert "The bundle check finds" in html


def test_the_statement_is_saved_and_previewed_through_the_sanitiser(author, draft):
    client = logged_in(author)
    response = client.post(
        reverse("task-statement", args=[draft.slug]), {"statement": "# ReLU\r\n\r\nApply it.\r\n"}
    )
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.statement == "# ReLU\n\nApply it.\n"

    preview = html_of(
        client.post(
            reverse("markdown-preview"),
            {"statement": "**bold** <script>alert(1)</script> [x](javascript:alert(2))"},
        )
    )
    assert "<strong>bold</strong>" in preview
    assert "<script" not in preview and "javascript:" not in preview


def test_the_statement_editor_updates_the_preview_with_htmx(author, draft):
    html = html_of(logged_in(author).get(reverse("task-edit", args=[draft.slug])))
    textarea = re.search(r'<textarea name="statement".*?>', html, re.S)
    assert textarea is not None
    assert f'hx-post="{reverse("markdown-preview")}"' in textarea.group(0)
    assert 'hx-target="#statement-preview"' in textarea.group(0)
    assert "data-editor" in textarea.group(0)


# Files ------------------------------------------------------------------------------------


def test_the_owner_adds_a_negative_with_its_expected_verdict(author, draft):
    response = logged_in(author).post(
        reverse("task-file-new", args=[draft.slug]),
        {
            "path": "bad/zero.py",
            "role": "negative",
            "visibility": "hidden",
            "expected_verdict": "wrong_answer",
            "note": "returns zeros",
            "content": "x = 1\r\n",
        },
    )
    file = draft.files.get(path="bad/zero.py")
    assert response["Location"] == reverse("task-file-edit", args=[draft.slug, file.pk])
    assert (file.expected_verdict, file.content) == ("wrong_answer", "x = 1\n")


def test_file_errors_are_shown_beside_their_fields(author, draft):
    html = html_of(
        logged_in(author).post(
            reverse("task-file-new", args=[draft.slug]),
            {"path": "../up.py", "role": "solution", "visibility": "prompt", "content": ""},
        )
    )
    assert "has an empty, &#x27;.&#x27; or &#x27;..&#x27; component" in field_block(html, "path")
    assert "must be hidden" in field_block(html, "visibility")
    assert not draft.files.filter(path="../up.py").exists()


def test_a_trace_is_uploaded_as_an_artifact(author, draft):
    upload = SimpleUploadedFile("trace.json", b'{"traceEvents": []}\n')
    logged_in(author).post(
        reverse("task-file-new", args=[draft.slug]),
        {"path": "traces/run.json", "role": "artifact", "visibility": "prompt", "upload": upload},
    )
    file = draft.files.get(path="traces/run.json")
    assert (file.role, file.content) == ("artifact", '{"traceEvents": []}\n')


def test_a_binary_upload_is_refused_beside_the_upload_field(author, draft):
    upload = SimpleUploadedFile("trace.bin", b"\xff\xfe\x00")
    html = html_of(
        logged_in(author).post(
            reverse("task-file-new", args=[draft.slug]),
            {"path": "t.bin", "role": "artifact", "visibility": "prompt", "upload": upload},
        )
    )
    assert "not UTF-8 text" in html
    assert not draft.files.filter(path="t.bin").exists()


def test_an_oversized_upload_is_cut_off_while_it_streams_in(author, draft):
    upload = SimpleUploadedFile("huge.json", b"x" * (MAX_FILE_BYTES + 10))
    html = html_of(
        logged_in(author).post(
            reverse("task-file-new", args=[draft.slug]),
            {"path": "huge.json", "role": "artifact", "visibility": "prompt", "upload": upload},
        )
    )
    assert f"The file is larger than {MAX_FILE_BYTES} bytes." in field_block(html, "upload")
    assert not draft.files.filter(path="huge.json").exists()


def test_an_oversized_bundle_upload_is_refused(author):
    upload = SimpleUploadedFile("huge.zip", b"\0" * (services.MAX_ZIP_BYTES + 1))
    html = html_of(logged_in(author).post(reverse("task-import"), {"bundle": upload}), status=400)
    block = field_block(html, "bundle")
    assert "The upload is larger than" in block and "This field is required" not in block


def test_the_file_editor_saves_renames_and_deletes(author, draft):
    client = logged_in(author)
    file = draft.files.get(path="solution.py")
    page = html_of(client.get(reverse("task-file-edit", args=[draft.slug, file.pk])))
    assert 'data-editor data-path="solution.py"' in page
    assert "class ModelNew(nn.Module):" in page

    client.post(
        reverse("task-file-edit", args=[draft.slug, file.pk]),
        {"role": "solution", "visibility": "hidden", "content": "# v2\r\n", "note": ""},
    )
    client.post(reverse("task-file-rename", args=[draft.slug, file.pk]), {"path": "sol/v2.py"})
    file.refresh_from_db()
    assert (file.path, file.content) == ("sol/v2.py", "# v2\n")

    client.post(reverse("task-file-delete", args=[draft.slug, file.pk]))
    assert not draft.files.filter(pk=file.pk).exists()


def test_a_rename_onto_another_file_is_refused_with_the_reason(author, draft):
    file = draft.files.get(path="solution.py")
    html = html_of(
        logged_in(author).post(
            reverse("task-file-rename", args=[draft.slug, file.pk]), {"path": "reference.py"}
        ),
        status=400,
    )
    assert "listed twice" in field_block(html, "path")


def test_the_statement_cannot_be_deleted(author, draft):
    statement = draft.files.get(role=FileRole.STATEMENT)
    client = logged_in(author)
    client.post(reverse("task-file-delete", args=[draft.slug, statement.pk]))
    assert TaskFile.objects.filter(pk=statement.pk).exists()


# Grading settings ------------------------------------------------------------------------------

GRADING_POST = {"format": "kernelbench", "language": "pytorch", "trials": "5", "seed_inputs": "on"}


def test_grading_settings_round_trip_through_the_form(author, draft):
    client = logged_in(author)
    post = {
        **GRADING_POST,
        "shapes": '[[shapes]]\r\nname = "tiny"\r\ndim = 16\r\n',
        "tol_float16_atol": "0.001",
        "tol_float16_rtol": "0.002",
        "timing_max_batches": "6",
        "limits": "wall_time_s = 120\n",
    }
    response = client.post(reverse("task-grading", args=[draft.slug]), post)
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.grading == {
        "format": "kernelbench",
        "language": "pytorch",
        "trials": 5,
        "seed_inputs": True,
        "shapes": [{"name": "tiny", "dim": 16}],
        "tolerances": {"float16": {"atol": 0.001, "rtol": 0.002}},
        "timing": {"max_batches": 6},
        "limits": {"wall_time_s": 120},
    }
    html = html_of(client.get(reverse("task-grading", args=[draft.slug])))
    assert 'name="tol_float16_atol" value="0.001"' in html
    assert "dim = 16" in html


@pytest.mark.parametrize(
    ("post", "field", "message"),
    [
        ({"trials": "2"}, "trials", "must be between 5 and 1000"),
        ({"trials": "many"}, "trials", "Enter a whole number"),
        ({"tol_float16_atol": "-1", "tol_float16_rtol": "0"}, "tol_float16_atol", "non-negative"),
        ({"timing_min_batches": "9", "timing_max_batches": "2"}, "timing_max_batches", "at least"),
        ({"shapes": "[[shapes]]\nname = 3"}, "shapes", "must be a string"),
        ({"shapes": "[[shapes]\n"}, "shapes", "not valid TOML"),
    ],
)
def test_grading_errors_appear_beside_the_field_they_name(author, draft, post, field, message):
    before = dict(draft.grading)
    response = logged_in(author).post(
        reverse("task-grading", args=[draft.slug]), {**GRADING_POST, **post}
    )
    html = html_of(response, status=400)
    if field.startswith("tol_"):
        cell = re.search(
            rf'<td class="field-invalid">\s*<input[^>]*name="{field}".*?</td>', html, re.S
        )
        assert cell is not None and message in cell.group(0)
    else:
        assert message in field_block(html, field)
    draft.refresh_from_db()
    assert draft.grading == before


def test_a_stored_task_of_a_kind_with_no_grader_has_no_grading_form(author):
    task = factories.make_task(author, kind="quiz", grading={})
    html = html_of(logged_in(author).get(reverse("task-grading", args=[task.slug])))
    assert "Quiz tasks have no grader yet" in html


def test_a_kind_with_a_grader_but_no_form_says_so(author, monkeypatch):
    """The grading page picks its form through the registry (the kind's
    ``authoring_form``); a kind whose grader offers none gets a plain message."""
    from graders.kernel.kind import KernelKind

    monkeypatch.setattr(KernelKind, "authoring_form", None)
    task = factories.make_task(author)
    response = logged_in(author).get(reverse("task-grading", args=[task.slug]))
    assert response.status_code == 200
    assert "GPU kernel tasks have no grading form here yet" in html_of(response)


# Rubric --------------------------------------------------------------------------------------


def criterion_post(**fields: str) -> dict[str, str]:
    post = {
        "key": "fast",
        "title": "Fast",
        "points": "2",
        "kind": "automatic",
        "rule_type": "speedup",
        "rule_speedup": "1.5",
        "rule_verdict": "accepted",
        "rule_clean": "true",
        "levels": "",
    }
    post.update(fields)
    return post


def rubric_keys(task: Task) -> list[str]:
    return list(
        Criterion.objects.filter(rubric__task=task)
        .order_by("position")
        .values_list("key", flat=True)
    )


def test_the_rubric_page_adds_criteria_and_shows_the_total(author, draft):
    client = logged_in(author)
    client.post(reverse("task-rubric", args=[draft.slug]), criterion_post())
    client.post(
        reverse("task-rubric", args=[draft.slug]),
        criterion_post(
            key="style", title="Style", points="3", kind="human",
            levels="0: Hard to read\r\n1.5: Fine\r\n3: Clear",
        ),
    )  # fmt: skip
    client.post(
        reverse("task-rubric", args=[draft.slug]),
        criterion_post(key="cheat", points="-4", rule_type="integrity", rule_clean="false"),
    )
    assert rubric_keys(draft) == ["correct", "clarity", "fast", "style", "cheat"]
    style = Criterion.objects.get(rubric__task=draft, key="style")
    assert style.levels[1] == {"score": 1.5, "descriptor": "Fine"}

    html = html_of(client.get(reverse("task-rubric", args=[draft.slug])))
    assert '<td class="num points" id="rubric-total">12</td>' in html
    assert "speedup \N{GREATER-THAN OR EQUAL TO} 1.5\N{MULTIPLICATION SIGN}" in html
    assert "\N{MINUS SIGN}4" in html


def test_the_rubric_page_offers_the_rule_types_of_the_tasks_kind(author, text_answer):
    task = factories.make_task(author, slug="capital-answer", kind="text-answer")
    client = logged_in(author)
    html = html_of(client.get(reverse("task-rubric", args=[task.slug])))
    assert '<option value="matched">the answer matched the key</option>' in html
    assert '<option value="speedup">' not in html
    response = client.post(
        reverse("task-rubric", args=[task.slug]), criterion_post(key="right", rule_type="speedup")
    )
    assert response.status_code == 400 and "right" not in rubric_keys(task)
    client.post(
        reverse("task-rubric", args=[task.slug]), criterion_post(key="right", rule_type="matched")
    )
    assert Criterion.objects.get(rubric__task=task, key="right").rule == {"type": "matched"}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"key": "correct"}, "key", "used by another criterion"),
        ({"points": "0"}, "points", "must not be 0"),
        ({"rule_speedup": ""}, "rule_speedup", "give the speedup"),
        ({"rule_speedup": "-2"}, "rule_type", "must be a number above 0"),
        ({"kind": "human", "levels": "zero: nothing"}, "levels", "write score: descriptor"),
        ({"kind": "human", "levels": "7: too many"}, "levels", "outside 0..2"),
    ],
)
def test_criterion_errors_appear_beside_the_field(author, draft, fields, field, message):
    response = logged_in(author).post(
        reverse("task-rubric", args=[draft.slug]), criterion_post(**fields)
    )
    html = html_of(response, status=400)
    assert message in field_block(html, field)
    assert rubric_keys(draft) == ["correct", "clarity"]


def test_criteria_are_reordered_and_deleted_with_htmx_fragments(author, draft):
    client = logged_in(author)
    clarity = Criterion.objects.get(rubric__task=draft, key="clarity")
    response = client.post(
        reverse("task-criterion-move", args=[draft.slug, clarity.pk]),
        {"direction": "up"},
        HTTP_HX_REQUEST="true",
    )
    fragment = html_of(response)
    assert "<html" not in fragment
    assert fragment.index("clarity") < fragment.index("correct")
    assert rubric_keys(draft) == ["clarity", "correct"]

    client.post(
        reverse("task-criterion-delete", args=[draft.slug, clarity.pk]), HTTP_HX_REQUEST="true"
    )
    assert rubric_keys(draft) == ["correct"]


def test_a_criterion_is_edited_in_place(author, draft):
    client = logged_in(author)
    correct = Criterion.objects.get(rubric__task=draft, key="correct")
    html = html_of(client.get(reverse("task-criterion-edit", args=[draft.slug, correct.pk])))
    assert "Edit criterion correct" in html and 'value="correct"' in html
    client.post(
        reverse("task-criterion-edit", args=[draft.slug, correct.pk]),
        criterion_post(key="correct", title="Correct everywhere", points="6", rule_type="verdict"),
    )
    correct.refresh_from_db()
    assert (correct.title, correct.points, correct.rule) == (
        "Correct everywhere",
        6,
        {"type": "verdict", "equals": "accepted"},
    )


# Sending to review ----------------------------------------------------------------------------


def test_send_to_review_is_disabled_with_the_reason_until_validation_passed(author, draft):
    client = logged_in(author)
    html = html_of(client.get(reverse("task-edit", args=[draft.slug])))
    assert re.search(r"<button[^>]*disabled[^>]*>Send to review</button>", html)
    assert "Validate the draft first" in html

    response = client.post(reverse("task-submit", args=[draft.slug]))
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.status == TaskStatus.DRAFT

    factories.mark_validated(draft)
    html = html_of(client.get(reverse("task-edit", args=[draft.slug])))
    assert not re.search(r"<button[^>]*disabled[^>]*>Send to review</button>", html)
    client.post(reverse("task-submit", args=[draft.slug]))
    draft.refresh_from_db()
    assert draft.status == TaskStatus.IN_REVIEW


def test_an_edit_after_validation_asks_for_a_new_one(author, draft):
    factories.mark_validated(draft)
    client = logged_in(author)
    client.post(reverse("task-statement", args=[draft.slug]), {"statement": "changed"})
    html = html_of(client.get(reverse("task-edit", args=[draft.slug])))
    assert "changed since it was validated" in html


def test_the_author_revises_a_published_task(author, colleague):
    task = factories.make_published_task(author)
    assert logged_in(colleague).post(reverse("task-revise", args=[task.slug])).status_code == 404
    response = logged_in(author).post(reverse("task-revise", args=[task.slug]))
    assert response["Location"] == reverse("task-edit", args=[task.slug])
    task.refresh_from_db()
    assert task.status == TaskStatus.DRAFT
