"""Submissions in the browser: lists and pages fed by reports the real grader wrote.

Who sees what: the submitter their own, authors those to their tasks, a reviewer
those they reviewed (blind: no model or run), nobody else (404)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from benchwright import roles
from submissions.models import Submission
from tests import factories, recorded
from tests.reviews.conftest import MODEL, RUN, graded, publish_rubric_task, review_as, set_policy

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return factories.make_user(roles.AUTHOR, username="owner")


@pytest.fixture
def task(owner):
    return publish_rubric_task(owner)


@pytest.fixture
def sender():
    return factories.make_user(roles.API_CLIENT, username="sender")


def page(client: Client, user, submission: Submission) -> str:
    client.force_login(user)
    response = client.get(reverse("submission-detail", args=[submission.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_submitter_sees_the_whole_report_of_a_real_grading(client, task, sender):
    submission = graded(task, submitter=sender, grading=recorded.report(recorded.ACCEPTED))
    report = recorded.report(recorded.ACCEPTED)

    html = page(client, sender, submission)

    assert "data-verdict>accepted<" in html
    assert f"{report['speedup']:.2f}\N{MULTIPLICATION SIGN}" in html and "significant" in html
    assert "data-timing-mode>cpu_time<" in html
    assert '<svg class="timing-chart"' in html  # medians and intervals, both sides
    for shape in {trial["shape"] for trial in report["correctness"]}:
        assert f'<th scope="row">{shape}</th>' in html  # the correctness table per shape
    assert "5 / 5" in html
    assert report["integrity"]["checks"][0] in html
    assert "The solution printed nothing." in html
    assert MODEL in html and RUN in html
    assert "Waiting for reviewers." in html
    assert "operator" not in html.lower()


def test_a_speedup_under_the_interpreter_is_never_shown_as_a_score(client, task, sender):
    set_policy(task, 0)
    submission = graded(
        task, submitter=sender, grading=recorded.report(recorded.INTERPRETER), enter_queue=False
    )
    speedup = recorded.report(recorded.INTERPRETER)["speedup"]

    html = page(client, sender, submission)

    assert "not scored" in html and "data-timing-mode>interpreter<" in html
    assert f"{speedup:.2f}\N{MULTIPLICATION SIGN}" not in html
    client.force_login(sender)
    listing = client.get(reverse("submission-list")).content.decode()
    assert "not scored" in listing and f"{speedup:.2f}\N{MULTIPLICATION SIGN}" not in listing


@pytest.mark.parametrize("name", recorded.names())
def test_every_recorded_report_renders_on_the_submission_page(client, task, sender, name):
    set_policy(task, 0)  # no review queue: the page shows the grading alone
    grading = recorded.report(name)
    submission = graded(
        task, submitter=sender, grading=grading, files=recorded.files(name), enter_queue=False
    )

    html = page(client, sender, submission)

    assert f"data-verdict>{grading['verdict']}<" in html
    for violation in grading["integrity"]["violations"]:
        assert violation in html


def test_the_lists_and_pages_update_while_grading_and_stop_when_settled(client, task, sender):
    set_policy(task, 0)
    queued = factories.make_submission(task.current_version, submitter=sender)
    client.force_login(sender)

    listing = client.get(reverse("submission-list")).content.decode()
    detail = client.get(reverse("submission-detail", args=[queued.pk])).content.decode()
    assert 'hx-trigger="every 3s"' in listing and "updating while grading" in listing
    assert 'hx-trigger="every 3s"' in detail and "grading…" in detail

    Submission.objects.filter(pk=queued.pk).delete()
    done = graded(task, submitter=sender, grading=recorded.report(recorded.WRONG_ANSWER),
                  enter_queue=False)  # fmt: skip
    fragment = client.get(reverse("submission-list"), HTTP_HX_REQUEST="true").content.decode()
    assert "data-live" not in fragment and f'data-submission="{done.pk}"' in fragment
    assert "data-live" not in page(client, sender, done)


def test_after_review_the_decision_and_feedback_show(client, task, sender):
    submission = graded(task, submitter=sender)
    # A name no page holds by chance (a two-letter one turned up inside a CSRF token).
    reviewer = factories.make_user(roles.REVIEWER, username="reviewer-ada-lovelace")
    review_as(reviewer, feedback="Tidy two-pass softmax.")

    html = page(client, sender, submission)

    assert "data-review" in html and "accepted" in html
    assert "Tidy two-pass softmax." in html
    assert "reviewer-ada-lovelace" not in html  # reviewers stay anonymous


def test_who_sees_which_submission(client, task, sender, owner):
    mine = graded(task, submitter=sender)
    other_sender = factories.make_user(roles.API_CLIENT, username="other-sender")
    theirs = graded(task, submitter=other_sender, model="other-model")
    reviewer = factories.make_user(roles.REVIEWER, username="r1")
    bystander = factories.make_user(roles.REVIEWER, username="r2")
    stranger_author = factories.make_user(roles.AUTHOR, username="stranger")
    review_as(reviewer)  # the first in the queue: ``mine``

    assert MODEL in page(client, owner, mine) and "other-model" in page(client, owner, theirs)
    blind = page(client, reviewer, mine)
    assert MODEL not in blind and RUN not in blind and "data-verdict>accepted<" in blind
    for user, hidden in ((sender, theirs), (bystander, mine), (stranger_author, mine),
                         (reviewer, theirs)):  # fmt: skip
        client.force_login(user)
        assert client.get(reverse("submission-detail", args=[hidden.pk])).status_code == 404

    client.force_login(sender)
    listing = client.get(reverse("submission-list")).content.decode()
    assert f'data-submission="{mine.pk}"' in listing
    assert f'data-submission="{theirs.pk}"' not in listing
    client.force_login(reviewer)
    listing = client.get(reverse("submission-list")).content.decode()
    assert f'data-submission="{mine.pk}"' in listing and MODEL not in listing
    assert "hidden (blind)" in listing
    # Exporters open any submission (an export may have left it out), blind.
    exporter = factories.make_user(roles.EXPORTER, username="exporter")
    for submission in (mine, theirs):
        html = page(client, exporter, submission)
        assert MODEL not in html and "other-model" not in html and RUN not in html
