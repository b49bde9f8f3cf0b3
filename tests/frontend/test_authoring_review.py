"""Validation pages and task review through Django's test client."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from tasks import services, validation
from tasks.models import ReviewDecision, TaskReview, TaskStatus
from tests import factories, recorded
from tests.frontend.test_authoring import html_of, logged_in
from tests.tasks.test_authoring_services import complete_task, in_review

pytestmark = pytest.mark.django_db

# Reports of real gradings (tests/recorded.py): the solution accepted with a
# significant CPU-time speedup, the negative a wrong answer whose failing trial had
# an infinite error (stored as null), with the Triton interpreter's warnings on its
# stderr.
SOLUTION_GRADING = recorded.ACCEPTED
NEGATIVE_GRADING = "row-softmax-no-max-subtraction"


def largest(name, key):
    """The largest per-trial error of a recorded report, as the page prints it."""
    values = [t[key] for t in recorded.report(name)["correctness"] if t[key] is not None]
    return f"{max(values):.3g}"


# Validation ---------------------------------------------------------------------------------


def test_validate_starts_a_run_and_the_page_polls_until_it_finishes(author):
    task = complete_task(author)
    client = logged_in(author)

    response = client.post(reverse("task-validate", args=[task.slug]))
    assert response["Location"] == reverse("task-validation", args=[task.slug])
    run = task.validation_runs.get()
    page = html_of(client.get(reverse("task-validation", args=[task.slug])))
    poll_url = reverse("task-validation-run", args=[task.slug, run.pk])
    assert f'hx-get="{poll_url}" hx-trigger="every 1s"' in page
    assert page.count("grading…") >= 2

    results = {r.path: r for r in run.results.all()}
    validation.validation_record(
        result_id=results["solution.py"].pk, report=recorded.report(SOLUTION_GRADING)
    )
    validation.validation_record(
        result_id=results["bad/identity.py"].pk, report=recorded.report(NEGATIVE_GRADING)
    )

    fragment = html_of(client.get(poll_url, HTTP_HX_REQUEST="true"))
    assert "<html" not in fragment
    assert 'hx-trigger="every 1s"' not in fragment  # finished: polling stops
    assert "Passed" in fragment
    for shown in (
        largest(SOLUTION_GRADING, "max_abs_error"),
        largest(SOLUTION_GRADING, "max_rel_error"),
        f"{recorded.report(SOLUTION_GRADING)['speedup']:.2f}\N{MULTIPLICATION SIGN}",
        "cpu_time",
        escape(recorded.report(SOLUTION_GRADING)["reason"]),
        escape(recorded.report(NEGATIVE_GRADING)["reason"]),
        "RuntimeWarning: overflow encountered in exp",
    ):
        assert shown in fragment, shown
    # The action bar is swapped too: review can start now.
    assert 'id="task-actions" hx-swap-oob="true"' in fragment
    assert not re.search(r"<button[^>]*disabled[^>]*>Send to review</button>", fragment)
    assert 'data-chart="validation-chart-' in fragment
    assert '"Reference (ms)"' in fragment


def validation_row(author, recordings, path):
    """The validation page's table row of ``path`` after a run graded with ``recordings``."""
    task = complete_task(author)
    run = validation.validation_start(task=task, user=author)
    for result in run.results.all():
        report = recorded.report(recordings[result.path])
        validation.validation_record(result_id=result.pk, report=report)
    html = html_of(logged_in(author).get(reverse("task-validation", args=[task.slug])))
    match = re.search(rf"<tr[^>]*>\s*<td><code>{re.escape(path)}</code>.*?</tr>", html, re.S)
    assert match is not None, path
    return match.group(0)


def test_an_interpreter_timing_is_not_shown_as_a_speedup(author):
    row = validation_row(
        author,
        {"solution.py": recorded.INTERPRETER, "bad/identity.py": NEGATIVE_GRADING},
        "solution.py",
    )
    assert "interpreter" in row
    speedup = recorded.report(recorded.INTERPRETER)["speedup"]
    assert f"{speedup:.2f}" not in row and "not scored" in row


def test_an_infinite_error_is_not_shown_as_a_tiny_one(author):
    row = validation_row(
        author,
        {"solution.py": SOLUTION_GRADING, "bad/identity.py": NEGATIVE_GRADING},
        "bad/identity.py",
    )
    assert "wrong_answer" in row and "not finite" in row
    assert largest(NEGATIVE_GRADING, "max_abs_error") not in row, "the largest finite error"


def test_a_failed_run_marks_the_file_that_slipped_through(author):
    task = complete_task(author)
    run = validation.validation_start(task=task, user=author)
    for result in run.results.all():
        validation.validation_record(result_id=result.pk, report=recorded.report(SOLUTION_GRADING))
    html = html_of(logged_in(author).get(reverse("task-validation", args=[task.slug])))
    assert 'class="row-fail"' in html
    assert "The last validation failed" in html


def test_a_broken_reference_fails_validation_and_shows_the_author_its_error(author):
    task = complete_task(author)
    run = validation.validation_start(task=task, user=author)
    for result in run.results.all():
        validation.validation_record(
            result_id=result.pk, report=recorded.report(recorded.TASK_ERROR)
        )
    run.refresh_from_db()
    assert run.status == "failed", "a task whose reference raises is never published"
    html = html_of(logged_in(author).get(reverse("task-validation", args=[task.slug])))
    assert "task_error" in html and "the reference's error" in html
    assert "the reference raised ZeroDivisionError" in html


def test_a_draft_without_a_solution_or_with_bundle_problems_is_not_validated(author):
    task = factories.make_task(author)
    client = logged_in(author)
    client.post(reverse("task-validate", args=[task.slug]))
    assert not task.validation_runs.exists()
    page = html_of(client.get(reverse("task-validation", args=[task.slug])))
    assert "Add a file with role solution" in page


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("author", 200),
        ("reviewer", 200),
        ("admin_user", 200),
        ("colleague", 404),
        ("outsider", 404),
    ],
)
def test_validation_results_are_for_those_who_see_hidden_files(request, author, who, status):
    task = factories.make_published_task(author)
    client = logged_in(request.getfixturevalue(who))
    assert client.get(reverse("task-validation", args=[task.slug])).status_code == status


def test_only_the_editor_starts_a_validation(author, reviewer):
    task = complete_task(author)
    assert logged_in(reviewer).post(reverse("task-validate", args=[task.slug])).status_code == 404
    assert not task.validation_runs.exists()


# Review ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("reviewer", 200),
        ("admin_user", 200),
        ("author", 404),
        ("colleague", 404),
        ("outsider", 404),
    ],
)
def test_only_reviewers_open_the_review_page(request, author, who, status):
    task = in_review(author)
    response = logged_in(request.getfixturevalue(who)).get(reverse("task-review", args=[task.slug]))
    assert response.status_code == status


def test_the_review_actions_are_shown_to_reviewers_only(author, reviewer, colleague):
    task = in_review(author)
    review_url = reverse("task-review", args=[task.slug])
    assert review_url in html_of(logged_in(reviewer).get(reverse("task-detail", args=[task.slug])))
    assert review_url not in html_of(
        logged_in(author).get(reverse("task-detail", args=[task.slug]))
    )


def test_the_review_page_shows_files_validation_and_that_it_is_the_first_review(author, reviewer):
    task = in_review(author)
    html = html_of(logged_in(reviewer).get(reverse("task-review", args=[task.slug])))
    assert "first review" in html
    assert "class ModelNew(nn.Module):" in html
    assert 'aria-label="Comment on line 9 of solution.py"' in html
    assert "Approve and publish" in html and "Request changes" in html
    assert "Passed" in html


def test_a_reviewer_comments_on_a_line_with_htmx(author, reviewer):
    task = in_review(author)
    client = logged_in(reviewer)
    form = html_of(
        client.get(
            reverse("review-comment-form", args=[task.slug]),
            {"path": "solution.py", "line": "9", "index": "2"},
            HTTP_HX_REQUEST="true",
        )
    )
    assert form.startswith("<tr") and 'name="line" value="9"' in form

    block = html_of(
        client.post(
            reverse("review-comment-add", args=[task.slug]),
            {"path": "solution.py", "line": "9", "body": "Name the kernel."},
            HTTP_HX_REQUEST="true",
        )
    )
    assert block.startswith('\n<details class="file review-file" id="review-file-')
    assert "Name the kernel." in block
    assert task.review_comments.get().line_text == "    def forward(self, x):"


def test_requesting_changes_shows_the_comments_to_the_author(author, reviewer):
    task = in_review(author)
    client = logged_in(reviewer)
    client.post(
        reverse("review-comment-add", args=[task.slug]),
        {"path": "solution.py", "line": "9", "body": "Name the kernel."},
    )
    response = client.post(
        reverse("review-decide", args=[task.slug]),
        {"decision": "changes_requested", "comment": "Nearly there."},
    )
    assert response["Location"] == reverse("task-detail", args=[task.slug])
    task.refresh_from_db()
    assert task.status == TaskStatus.DRAFT

    for url in (reverse("task-detail", args=[task.slug]), reverse("task-edit", args=[task.slug])):
        html = html_of(logged_in(author).get(url))
        assert "Changes requested" in html
        assert "Nearly there." in html and "Name the kernel." in html
        assert "<code>solution.py:9</code>" in html


def test_the_second_review_shows_the_diff_since_the_first(author, reviewer):
    task = in_review(author)
    services.task_review_decide(
        task=task, reviewer=reviewer, decision="changes_requested", comment="Add a docstring."
    )
    task.refresh_from_db()
    file = task.files.get(path="solution.py")
    services.task_file_save(
        task=task, user=author, file=file, content='"""ReLU."""\n' + file.content,
        visibility="hidden", role="solution",
    )  # fmt: skip
    factories.mark_validated(task)
    services.task_submit_for_review(task=task, user=author)

    html = html_of(logged_in(reviewer).get(reverse("task-review", args=[task.slug])))
    assert "Changes since the last review" in html
    assert '<tr class="diff-add">' in html
    assert "&quot;&quot;&quot;ReLU.&quot;&quot;&quot;" in html


def test_approving_publishes_and_the_author_sees_the_version(author, reviewer):
    task = in_review(author)
    response = logged_in(reviewer).post(
        reverse("review-decide", args=[task.slug]), {"decision": "approved", "comment": ""}
    )
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.status == TaskStatus.PUBLISHED
    review = TaskReview.objects.get()
    assert review.decision == ReviewDecision.APPROVED and review.version == task.current_version
    html = html_of(logged_in(author).get(reverse("task-detail", args=[task.slug])))
    assert "Showing published version v1" in html


def test_the_author_cannot_approve_by_posting(author):
    task = in_review(author)
    response = logged_in(author).post(
        reverse("review-decide", args=[task.slug]), {"decision": "approved"}
    )
    assert response.status_code == 404
    task.refresh_from_db()
    assert task.status == TaskStatus.IN_REVIEW
