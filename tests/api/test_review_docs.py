"""The review bodies docs/api.md shows are ones the review API accepts as they are,
on the catalog task they name, and a reviewer's ``accept`` comes out as ``accepted``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reviews import services as review_services
from tests import recorded
from tests.api.conftest import bearer, graded_with, publish_catalog_task, token_for

pytestmark = pytest.mark.django_db

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented(after: str, pattern: str) -> str:
    """The first match of ``pattern`` in docs/api.md after the text ``after``."""
    text = API_DOC.read_text(encoding="utf-8")
    assert after in text, after
    found = re.search(pattern, text.split(after, 1)[1], re.S)
    assert found is not None, pattern
    return found.group(1)


def documented_review() -> dict:
    return json.loads(documented("with the review:", r"```json\n(.*?)```"))


def documented_judgement() -> dict:
    body = documented("pairs/{id}/judgement/", r"`(\{\"winner\".*?\})`")
    return json.loads(re.sub(r"\s+", " ", body))


@pytest.fixture
def task(db):
    return publish_catalog_task("cpu-causal-softmax")


@pytest.mark.parametrize("decision", ["as documented", "accepted"])
def test_the_documented_review_is_accepted_and_its_accept_reads_accepted(
    task, owner, reviewer, decision
):
    submission = graded_with(task, owner, recorded.ACCEPTED)
    review_services.review_queue_enter(submission_id=submission.pk)
    api = bearer(token_for(reviewer))
    item = api.post("/api/v1/reviews/next/").json()
    body = documented_review() | {"item": item["id"]}
    if decision != "as documented":  # the outcome's spelling, which the docs say it takes
        body["decision"] = decision

    response = api.post("/api/v1/reviews/", body, format="json")

    assert response.status_code == 201, response.content
    review = response.json()
    assert review["decision"] == "accept"
    scores = {s["criterion"]: s for s in review["scores"]}
    assert scores["speedup-2x"]["overturned"] is True and scores["speedup-2x"]["points"] == 0
    assert scores["speedup-2x"]["automatic_points"] == 2
    # 11 automatic points, less the overturned 2, plus the levels 2 + 2 + 1, of 18
    assert review["score"] == pytest.approx(14 / 18)
    client = bearer(token_for(owner))
    detail = client.get(f"/api/v1/submissions/{submission.pk}/").json()
    assert detail["review"]["decision"] == "accepted"
    [row] = client.get("/api/v1/submissions/").json()["results"]
    assert row["review_decision"] == "accepted" and row["points"] == 14


def test_the_documented_judgement_is_accepted(task, owner, reviewer):
    for name, model in ((recorded.ACCEPTED, "m-a"), (recorded.ACCEPTED_SLOWER, "m-b")):
        submission = graded_with(task, owner, name, model_name=model)
        review_services.review_queue_enter(submission_id=submission.pk)  # as on commit
    api = bearer(token_for(reviewer))
    pair = api.post("/api/v1/reviews/pairs/next/")
    assert pair.status_code == 200, pair.content
    assert {c["key"] for c in pair.json()["criteria"]} == set(documented_judgement()["criteria"])

    response = api.post(
        f"/api/v1/reviews/pairs/{pair.json()['id']}/judgement/",
        documented_judgement(),
        format="json",
    )

    assert response.status_code == 201, response.content
    assert response.json()["winner"] == "a"
