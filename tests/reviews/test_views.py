"""The review screens through Django's test client."""

import re

import pytest
from django.urls import reverse

from reviews import services as review_services
from reviews.models import AuditEvent, LineComment, Review, ReviewAssignment
from tests import factories, recorded
from tests.reviews.conftest import (
    SOLUTION,
    full_review,
    graded,
    next_claim,
    outcome_of,
    report,
    review_as,
    set_policy,
    tainted_report,
)

pytestmark = pytest.mark.django_db


def logged_in(client, user):
    client.force_login(user)
    return client


def claim(client):
    response = client.post(reverse("reviews-next"))
    assert response.status_code == 302
    return response.headers["Location"]


def form_data(**changes):
    data = {
        "decision": "accept",
        "feedback": "Correct and clear.",
        "level-clarity": "2",
        "level-numerical-care": "1",
        "comment-clarity": "Named constants help.",
        "lc-path": ["solution.py"],
        "lc-line": ["9"],
        "lc-body": ["This clamp reads x once."],
    }
    data.update(changes)
    return data


def test_the_review_screen_shows_everything_a_reviewer_needs(client, task, make_reviewer):
    graded(task)
    logged_in(client, make_reviewer("r1"))

    html = client.get(claim(client)).content.decode()

    assert "Compute <strong>relu</strong>." in html  # the statement, as Markdown
    assert 'class="k">return</span>' in html  # Pygments-highlighted code
    assert "against the starter" in html and "against the reference" in html  # both diffs
    assert '<svg class="timing-chart"' in html and "Reference" in html  # the timing chart
    shown = report()
    assert f"{shown['speedup']:.2f}\N{MULTIPLICATION SIGN}" in html  # speedup
    assert "cpu_time" in html and "significant" in html  # timing mode, significance
    assert "No findings" in html and shown["integrity"]["checks"][0] in html  # integrity
    assert "No output." in html  # the logs (the solution printed nothing)
    assert 'name="overturn-correct"' in html and "awarded <strong data-awarded>5</strong>" in html
    assert "Clear at a glance" in html  # level descriptors of a human criterion
    assert 'name="level-numerical-care"' in html
    assert "<kbd>j</kbd>/<kbd>k</kbd>" in html and "Ctrl</kbd>+<kbd>Enter" in html  # help line


def test_integrity_findings_and_the_penalty_show_on_the_screen(client, task, make_reviewer):
    set_policy(task, 1, review_failures=True)
    graded(task, grading=tainted_report())
    logged_in(client, make_reviewer("r1"))

    html = client.get(claim(client)).content.decode()

    assert tainted_report()["integrity"]["violations"][0] in html
    assert "awarded <strong data-awarded>\N{MINUS SIGN}3</strong>" in html


def test_submitting_the_form_records_scores_comments_and_line_comments(client, task, make_reviewer):
    graded(task)
    reviewer = make_reviewer("r1")
    logged_in(client, reviewer)
    url = claim(client)

    response = client.post(url, form_data())

    assert response.status_code == 302
    review = Review.objects.get(reviewer=reviewer)
    assert review.decision == "accept" and review.score == pytest.approx(0.8)
    assert review.scores.get(criterion__key="clarity").comment == "Named constants help."
    comment = LineComment.objects.get(review=review)
    assert (comment.path, comment.line, comment.body) == (
        "solution.py",
        9,
        "This clamp reads x once.",
    )
    assert comment.line_text == SOLUTION.splitlines()[8]
    page = client.get(url).content.decode()
    assert "Submitted" in page and "This clamp reads x once." in page


def test_a_form_with_problems_keeps_what_was_typed(client, task, make_reviewer):
    graded(task)
    logged_in(client, make_reviewer("r1"))
    url = claim(client)

    response = client.post(url, form_data(**{"overturn-correct": "on", "reason-correct": ""}))

    html = response.content.decode()
    assert response.status_code == 200
    assert "correct: say why the automatic result is wrong" in html
    assert "Correct and clear." in html
    assert not Review.objects.exists()


def test_a_line_comment_outside_the_file_is_refused(client, task, make_reviewer):
    graded(task)
    logged_in(client, make_reviewer("r1"))
    url = claim(client)

    response = client.post(url, form_data(**{"lc-line": ["999"]}))

    assert "solution.py has no line 999" in response.content.decode()


def test_other_reviews_show_only_after_submitting_your_own(client, task, make_reviewer):
    set_policy(task, 2)
    graded(task)
    review_as(make_reviewer("r1"), feedback="FIRST-REVIEWER-FEEDBACK", clarity=0)
    logged_in(client, make_reviewer("r2"))
    url = claim(client)

    before = client.get(url).content.decode()
    client.post(url, form_data())
    after = client.get(url).content.decode()

    assert "FIRST-REVIEWER-FEEDBACK" not in before
    assert "FIRST-REVIEWER-FEEDBACK" in after and "Reviewer 1" in after
    assert "r1" not in re.sub(r"<[^>]+>", " ", after).split()  # no reviewer names


def test_a_reviewer_cannot_open_another_reviewers_item(client, task, make_reviewer):
    graded(task)
    logged_in(client, make_reviewer("r1"))
    url = claim(client)
    client.logout()
    logged_in(client, make_reviewer("r2"))

    assert client.get(url).status_code == 404


def test_the_review_pages_are_for_reviewers_only(client, task):
    logged_in(client, factories.make_user("api_client"))

    assert client.get(reverse("reviews-dashboard")).status_code == 403
    assert client.post(reverse("reviews-next")).status_code == 403


def test_an_empty_queue_says_so(client, task, make_reviewer):
    logged_in(client, make_reviewer("r1"))

    response = client.post(reverse("reviews-next"), follow=True)

    assert "Nothing left in your queue." in response.content.decode()


def test_skip_returns_the_item_to_the_queue_and_moves_on(client, task, make_reviewer):
    graded(task)
    graded(task)
    logged_in(client, make_reviewer("r1"))
    url = claim(client)
    pk = int(url.rstrip("/").split("/")[-1])

    response = client.post(reverse("reviews-release", args=[pk]))

    assert ReviewAssignment.objects.get(pk=pk).status == "open"
    assert response.status_code == 302 and response.headers["Location"] != url
    assert response.headers["Location"].startswith("/review/items/")


def test_the_dashboard_shows_queue_throughput_and_agreement(client, task, make_reviewer):
    reviewer = make_reviewer("r1")
    graded(task)
    graded(task)
    review_as(reviewer)
    logged_in(client, reviewer)

    html = client.get(reverse("reviews-dashboard")).content.decode()

    assert re.search(r'data-stat="queue">1<', html)
    assert re.search(r'data-stat="total">1<', html)
    assert '<svg class="bar-chart"' in html and "<title>Reviews per day</title>" in html
    assert "Your agreement" in html


def test_the_nav_links_to_reviews_for_reviewers_only(client, task, make_reviewer):
    logged_in(client, make_reviewer("r1"))
    assert 'href="/review/"' in client.get(reverse("task-list")).content.decode()
    client.logout()
    logged_in(client, factories.make_user("author"))
    assert 'href="/review/"' not in client.get(reverse("task-list")).content.decode()


def test_the_admin_overview_lists_reviewers_tasks_and_kappa(client, task, make_reviewer):
    set_policy(task, 2)
    first, second = make_reviewer("alice"), make_reviewer("bob")
    for decisions in (("accept", "accept"), ("accept", "reject"), ("reject", "reject")):
        graded(task)
        review_as(first, decision=decisions[0])
        review_as(second, decision=decisions[1])
    admin = factories.make_user("admin", is_staff=True)
    logged_in(client, admin)

    html = client.get(reverse("reviews-overview")).content.decode()

    assert "alice" in html and "bob" in html
    # Decisions (A,A), (A,R), (R,R): p_o = 2/3; alice accepts 2/3, bob 1/3, so
    # p_e = 2/3 * 1/3 + 1/3 * 2/3 = 4/9 and kappa = (6/9 - 4/9) / (5/9) = 0.4.
    assert '<td>alice &amp; bob</td><td class="num">3</td><td class="num">0.400</td>' in html
    assert "ReLU, reviewed" in html


def test_the_overview_is_not_for_plain_reviewers(client, make_reviewer):
    logged_in(client, make_reviewer("r1"))

    assert client.get(reverse("reviews-overview")).status_code == 403


def test_the_adjudication_screen_decides(client, task, make_reviewer, senior):
    set_policy(task, 2)
    submission = graded(task)
    review_as(make_reviewer("r1"), decision="accept")
    review_as(make_reviewer("r2"), decision="reject")
    outcome = outcome_of(submission)
    logged_in(client, senior)

    listing = client.get(reverse("reviews-adjudication")).content.decode()
    page = client.get(reverse("reviews-adjudicate", args=[outcome.pk])).content.decode()
    response = client.post(
        reverse("reviews-adjudicate", args=[outcome.pk]),
        {"decision": "accepted", "reason": "the reject misread the tolerance"},
    )

    assert "ReLU, reviewed" in listing
    assert "Reviewer 1" in page and "Reviewer 2" in page
    assert response.status_code == 302
    outcome.refresh_from_db()
    assert outcome.decision == "accepted" and outcome.adjudicated_by == senior


def test_the_pairwise_screen_records_a_judgement(client, task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2", files={"solution.py": SOLUTION.replace("min=0", "min=0.0")})
    reviewer = make_reviewer("r1")
    logged_in(client, reviewer)

    response = client.get(reverse("reviews-pairs"))
    url = response.headers["Location"]
    html = client.get(url).content.decode()
    posted = client.post(
        url,
        {
            "winner": "a",
            "winner-clarity": "tie",
            "winner-numerical-care": "b",
            "reason": "A is simpler.",
        },
    )

    assert 'data-side="a"' in html and 'data-side="b"' in html and "A → B" in html
    assert posted.status_code == 302
    judgement = reviewer.pairwise_judgements.get()
    assert judgement.criterion_winners == {"clarity": "tie", "numerical-care": "b"}


def test_pairwise_with_nothing_to_pair_says_so(client, make_reviewer):
    logged_in(client, make_reviewer("r1"))

    response = client.get(reverse("reviews-pairs"))

    assert "No pair to judge" in response.content.decode()


def test_a_senior_sees_adjudication_on_the_dashboard(client, task, make_reviewer, senior):
    set_policy(task, 2)
    graded(task)
    review_as(make_reviewer("r1"), decision="accept")
    review_as(make_reviewer("r2"), decision="reject")
    logged_in(client, senior)

    html = client.get(reverse("reviews-dashboard")).content.decode()

    assert "Adjudication queue" in html and "ReLU, reviewed" in html


def test_review_services_reject_a_decision_outside_the_choices(task, make_reviewer):
    graded(task)
    reviewer = make_reviewer("r1")
    assignment = next_claim(reviewer)

    with pytest.raises(review_services.ReviewError, match="decision must be one of"):
        review_services.review_submit(
            assignment_id=assignment.pk, reviewer=reviewer, data=full_review(decision="maybe")
        )


def test_hostile_code_and_feedback_are_shown_as_text(client, task, make_reviewer):
    set_policy(task, 2)
    hostile = "x = '<script>alert(1)</script>'\n"
    graded(task, files={"solution.py": hostile})
    review_as(make_reviewer("r1"), feedback="<img src=x onerror=alert(2)>")
    logged_in(client, make_reviewer("r2"))
    url = claim(client)
    client.post(url, form_data(**{"lc-line": ["1"]}))

    html = client.get(url).content.decode()

    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html


def test_a_submitted_review_can_be_revised_while_the_outcome_is_open(client, task, make_reviewer):
    set_policy(task, 2)
    graded(task)
    reviewer = make_reviewer("r1")
    logged_in(client, reviewer)
    url = claim(client)
    client.post(url, form_data())

    page = client.get(url).content.decode()
    client.post(url, form_data(decision="needs_fix", **{"lc-body": ["Reads x once."]}))

    assert "Save changes" in page and "This clamp reads x once." in page  # prefilled
    review = Review.objects.get(reviewer=reviewer)
    assert review.decision == "needs_fix"
    assert list(review.line_comments.values_list("body", flat=True)) == ["Reads x once."]
    assert AuditEvent.objects.filter(verb="review.edited", actor=reviewer).count() == 1


@pytest.mark.parametrize("name", recorded.names())
def test_every_recorded_report_renders_on_the_review_screen(client, task, make_reviewer, name):
    """Reports as the real grader wrote them (every verdict it gave the catalog's
    solutions and negatives): the item page renders each, with its verdict."""
    set_policy(task, 1, review_failures=True)
    files = recorded.files(name)
    unfinished = recorded.report(name)["verdict"] in ("needs_hardware", "task_error")
    if unfinished or not any(text.strip() for text in files.values()):
        # Not a finished grading, or nothing to read: it never reaches a reviewer.
        graded(task, grading=recorded.report(name), files=files, enter_queue=False)
        return
    graded(task, grading=recorded.report(name), files=files)
    logged_in(client, make_reviewer("r1"))

    response = client.get(claim(client))

    assert response.status_code == 200
    html = response.content.decode()
    assert f"data-verdict>{recorded.report(name)['verdict']}<" in html


def test_the_pair_screen_renders_two_recorded_accepted_reports(client, task, make_reviewer):
    graded(task, model="m-1", grading=recorded.report(recorded.ACCEPTED))
    graded(task, model="m-2", grading=recorded.report(recorded.ACCEPTED_SLOWER))
    logged_in(client, make_reviewer("r1"))

    response = client.get(reverse("reviews-pairs"), follow=True)

    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("data-verdict>accepted<") == 2
    assert "within noise" in html and "significant" in html


def test_an_empty_chart_says_there_is_no_data_yet(client, make_reviewer):
    logged_in(client, make_reviewer("r1"))
    html = client.get(reverse("reviews-dashboard")).content.decode()
    assert "No data yet: reviews per day." in html
    assert '<svg class="bar-chart"' not in html
