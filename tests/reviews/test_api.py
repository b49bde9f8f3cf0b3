"""The review API with bearer tokens: scope ``review``."""

import pytest
from django.core.cache import cache

from accounts import scopes
from reviews.models import Review
from tests.api.conftest import bearer, token_for
from tests.reviews.conftest import graded, review_as, set_policy

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


def review_body(item, **changes):
    body = {
        "item": item,
        "decision": "accept",
        "feedback": "Good.",
        "scores": [
            {"criterion": "clarity", "level": 2, "comment": "clear"},
            {"criterion": "numerical-care", "level": 1},
            {"criterion": "integrity", "overturned": False},
        ],
        "comments": [{"path": "solution.py", "line": 9, "body": "one pass"}],
    }
    body.update(changes)
    return body


def test_next_claims_an_item_and_returns_it_blind(task, make_reviewer):
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))

    response = api.post("/api/v1/reviews/next/")

    assert response.status_code == 200
    item = response.json()
    assert item["status"] == "claimed" and item["expires_at"]
    assert item["task"]["slug"] == "relu-review"
    assert [f["path"] for f in item["files"]] == ["solution.py"]
    assert [f["path"] for f in item["starter_files"]] == ["starter.py"]
    assert [f["path"] for f in item["reference_files"]] == ["reference.py"]
    assert item["report"]["verdict"] == "accepted"
    rubric = {c["key"]: c for c in item["rubric"]}
    assert rubric["correct"]["awarded"] == 5 and rubric["correct"]["met"] is True
    assert [level["score"] for level in rubric["clarity"]["levels"]] == [0, 1, 2]
    assert api.get(f"/api/v1/reviews/items/{item['id']}/").json()["id"] == item["id"]


def test_next_with_an_empty_queue_is_204(task, make_reviewer):
    api = bearer(token_for(make_reviewer("r1")))

    assert api.post("/api/v1/reviews/next/").status_code == 204


def test_submit_list_and_read_a_review(task, make_reviewer):
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))
    item = api.post("/api/v1/reviews/next/").json()

    created = api.post("/api/v1/reviews/", review_body(item["id"]), format="json")

    assert created.status_code == 201, created.json()
    review = created.json()
    assert review["score"] == pytest.approx(0.8) and review["item"] == item["id"]
    assert {s["criterion"]: s["points"] for s in review["scores"]} == {
        "correct": 5.0,
        "integrity": 0.0,
        "clarity": 2.0,
        "numerical-care": 1.0,
    }
    assert review["comments"][0]["line"] == 9
    listed = api.get("/api/v1/reviews/").json()
    assert [r["id"] for r in listed["results"]] == [review["id"]]
    assert api.get(f"/api/v1/reviews/{review['id']}/").json()["feedback"] == "Good."


@pytest.mark.parametrize(("sent", "stored"), [("rejected", "reject"), ("accepted", "accept")])
def test_the_outcome_spelling_of_a_decision_means_the_same(task, make_reviewer, sent, stored):
    # Export filters say "accepted"/"rejected" (outcomes); a review may say either.
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))
    item = api.post("/api/v1/reviews/next/").json()

    wrong = api.post("/api/v1/reviews/", review_body(item["id"], decision="maybe"), format="json")
    created = api.post("/api/v1/reviews/", review_body(item["id"], decision=sent), format="json")

    assert wrong.status_code == 400 and "maybe" in wrong.json()["error"]["message"]
    assert created.status_code == 201, created.json()
    assert created.json()["decision"] == stored


def test_a_review_with_a_bad_level_is_a_400_and_changes_nothing(task, make_reviewer):
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))
    item = api.post("/api/v1/reviews/next/").json()
    body = review_body(item["id"])
    body["scores"][0]["level"] = 7

    response = api.post("/api/v1/reviews/", body, format="json")

    assert response.status_code == 400
    assert "clarity: the level must be one of 0, 1, 2" in response.json()["error"]["message"]
    assert not Review.objects.exists()


def test_a_second_review_of_the_same_item_is_a_409(task, make_reviewer):
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))
    item = api.post("/api/v1/reviews/next/").json()
    assert api.post("/api/v1/reviews/", review_body(item["id"]), format="json").status_code == 201

    again = api.post("/api/v1/reviews/", review_body(item["id"]), format="json")

    assert again.status_code == 409


def test_someone_elses_item_is_a_404(task, make_reviewer):
    graded(task)
    item = bearer(token_for(make_reviewer("r1"))).post("/api/v1/reviews/next/").json()
    other = bearer(token_for(make_reviewer("r2")))

    assert other.get(f"/api/v1/reviews/items/{item['id']}/").status_code == 404
    assert other.post("/api/v1/reviews/", review_body(item["id"]), format="json").status_code == 404


def test_editing_a_review_while_the_outcome_is_open(task, make_reviewer):
    set_policy(task, 2)
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))
    item = api.post("/api/v1/reviews/next/").json()
    review = api.post("/api/v1/reviews/", review_body(item["id"]), format="json").json()
    body = review_body(item["id"], decision="needs_fix")
    del body["item"]

    edited = api.put(f"/api/v1/reviews/{review['id']}/", body, format="json")
    review_as(make_reviewer("r2"), decision="needs_fix")  # both say needs_fix: final
    late = api.put(f"/api/v1/reviews/{review['id']}/", body, format="json")

    assert edited.status_code == 200 and edited.json()["decision"] == "needs_fix"
    assert late.status_code == 409


def test_release_hands_the_item_back(task, make_reviewer):
    graded(task)
    api = bearer(token_for(make_reviewer("r1")))
    item = api.post("/api/v1/reviews/next/").json()

    assert api.post(f"/api/v1/reviews/items/{item['id']}/release/").status_code == 204
    # Released, it is no longer this reviewer's item.
    assert api.get(f"/api/v1/reviews/items/{item['id']}/").status_code == 404


def test_the_review_scope_is_required(task, make_reviewer):
    graded(task)
    api = bearer(token_for(make_reviewer("r1"), scopes=[scopes.READ]))

    response = api.post("/api/v1/reviews/next/")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "missing_scope"


def test_a_client_without_the_reviewer_role_cannot_review(task, client_user):
    graded(task)
    api = bearer(token_for(client_user))

    assert api.post("/api/v1/reviews/next/").status_code == 403
    assert api.get("/api/v1/reviews/").status_code == 403


def test_pairwise_through_the_api(task, make_reviewer):
    graded(task, model="m-1")
    graded(task, model="m-2")
    api = bearer(token_for(make_reviewer("r1")))

    pair = api.post("/api/v1/reviews/pairs/next/").json()
    judged = api.post(
        f"/api/v1/reviews/pairs/{pair['id']}/judgement/",
        {"winner": "tie", "criteria": {"clarity": "a", "numerical-care": "b"}, "reason": "even"},
        format="json",
    )

    assert [c["key"] for c in pair["criteria"]] == ["clarity", "numerical-care"]
    assert pair["a"]["report"]["verdict"] == "accepted" and pair["b"]["files"]
    assert judged.status_code == 201 and judged.json()["winner"] == "tie"
    assert api.post("/api/v1/reviews/pairs/next/").status_code == 204
