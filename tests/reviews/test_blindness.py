"""Reviews are blind: no page or API response a reviewer gets names the model,
the run, the client who submitted, or its labels."""

import json

import pytest
from django.core.cache import cache
from django.urls import reverse

from reviews.models import ReviewAssignment
from tests.api.conftest import bearer, token_for
from tests.reviews.conftest import (
    CLIENT,
    LABEL,
    MODEL,
    RUN,
    graded,
    outcome_of,
    review_as,
    set_policy,
)

pytestmark = pytest.mark.django_db

IDENTITY = (MODEL, RUN, CLIENT, LABEL)


def assert_blind(text: str) -> None:
    leaked = [secret for secret in IDENTITY if secret in text]
    assert not leaked, f"identity leaked: {leaked}"


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def world(task, client_user, make_reviewer, senior):
    """Two reviewed-and-disagreeing submissions, a fresh one, and a pair to judge."""
    set_policy(task, 2)
    disputed = graded(task, submitter=client_user)
    first, second = make_reviewer("r1"), make_reviewer("r2")
    review_as(first, decision="accept")
    review_as(second, decision="reject")
    graded(task, submitter=client_user, model=MODEL + "-b", run_id=RUN + "-b")
    return {"disputed": disputed, "first": first, "second": second, "senior": senior}


def test_the_identity_is_really_on_the_submissions(world):
    submission = world["disputed"]
    assert (submission.model_name, submission.run_id) == (MODEL, RUN)
    assert submission.submitter.username == CLIENT and submission.labels == {"team": LABEL}


def test_no_review_page_names_the_model_run_or_client(client, world, make_reviewer):
    reviewer = make_reviewer("r3")
    client.force_login(reviewer)
    pages = [client.get(reverse("reviews-dashboard"))]
    claimed = client.post(reverse("reviews-next"))
    pages.append(client.get(claimed.headers["Location"]))
    pair = client.get(reverse("reviews-pairs"))
    pages.append(client.get(pair.headers["Location"]))
    client.force_login(world["first"])
    pages.append(client.get(reverse("reviews-dashboard")))
    item = world["first"].submission_reviews.get().assignment_id
    pages.append(client.get(reverse("reviews-item", args=[item])))  # others' reviews shown
    client.force_login(world["senior"])
    pages.append(client.get(reverse("reviews-adjudication")))
    outcome = outcome_of(world["disputed"]).pk
    pages.append(client.get(reverse("reviews-adjudicate", args=[outcome])))
    pages.append(client.get(reverse("reviews-overview")))

    for page in pages:
        assert page.status_code == 200
        assert_blind(page.content.decode())


def test_no_review_api_response_names_the_model_run_or_client(world, make_reviewer):
    api = bearer(token_for(make_reviewer("r3")))
    bodies = [api.post("/api/v1/reviews/next/"), api.post("/api/v1/reviews/pairs/next/")]
    item = bodies[0].json()["id"]
    bodies.append(api.get(f"/api/v1/reviews/items/{item}/"))
    first = bearer(token_for(world["first"]))
    bodies.append(first.get("/api/v1/reviews/"))
    review = world["first"].submission_reviews.get()
    bodies.append(first.get(f"/api/v1/reviews/{review.pk}/"))
    bodies.append(first.get(f"/api/v1/reviews/items/{review.assignment_id}/"))

    for body in bodies:
        assert body.status_code == 200, body.content
        assert_blind(json.dumps(body.json()))


def test_items_are_named_by_their_review_slot(world, make_reviewer):
    reviewer = make_reviewer("r3")
    api = bearer(token_for(reviewer))

    item = api.post("/api/v1/reviews/next/").json()

    assert item["id"] == ReviewAssignment.objects.get(reviewer=reviewer).pk
    assert not {"submission", "submission_id", "model", "run_id", "labels"} & set(item)
