"""Real catalog tasks end to end: honest solutions graded with recorded reports and
accepted by reviewers through the review services all reach the datasets; one
that pastes a hidden passage is left out, and the snapshot page says why
without showing what it quotes."""

from __future__ import annotations

import json
import random

import pytest

from exports import guard_check
from reviews import services as review_services
from reviews.models import PairOffer
from rubrics.models import Criterion, CriterionKind
from tests.exports.conftest import (
    GRADED_TASKS,
    all_rows,
    build,
    define,
    graded_with,
    honest_code,
    review_next,
)

SFT_SLUG = "catalog-sft"


def test_every_reviewer_accepted_honest_solution_is_an_sft_row(catalog):
    snapshot = build(define(catalog.exporter, slug=SFT_SLUG, format="sft"), catalog.exporter)

    accepted = {s.pk for made in catalog.accepted.values() for s in made}
    assert len(accepted) == 6
    assert {row["submission_id"] for row in all_rows(snapshot)} == accepted
    assert snapshot.manifest["skipped"] == {}
    assert not snapshot.left_out.exists()


def test_the_rl_export_shows_what_each_kind_makes_public_and_no_hidden_test(catalog):
    snapshot = build(define(catalog.exporter, slug="catalog-rl", format="rl"), catalog.exporter)

    rows = {row["task"]: row for row in all_rows(snapshot)}
    assert set(rows) == set(catalog.tasks)
    debugging = json.loads(rows["debug-softmax-overflow"]["grading"])
    assert debugging["fail_to_pass"] == {
        "total": 5,
        "visible": ["tests/test_repro.py::test_large_scores_stay_finite"],
    }
    assert debugging["pass_to_pass"]["total"] == 4
    assert debugging["fix_paths"] == ["softmax.py"]
    assert "test_softmax_hidden" not in rows["debug-softmax-overflow"]["grading"]
    for slug, row in rows.items():
        for shape_set in json.loads(row["grading"]).get("shapes", []):
            assert set(shape_set) <= {"name", "hosts"}, slug  # never the sizes tested


def test_the_preference_export_prefers_each_task_s_better_reviewed_solution(catalog):
    snapshot = build(define(catalog.exporter, format="preference"), catalog.exporter)

    rows = all_rows(snapshot)
    assert {row["task"] for row in rows} == set(GRADED_TASKS)
    for row in rows:
        better, worse = catalog.accepted[row["task"]]
        assert (row["chosen_submission_id"], row["rejected_submission_id"]) == (
            better.pk,
            worse.pk,
        )
        assert row["source"] == "score_margin"
    assert snapshot.manifest["skipped"] == {}


def test_a_judgement_made_through_the_pair_queue_becomes_a_pairwise_row(catalog):
    reviewer = catalog.reviewers[0]
    offer = review_services.pair_offer_next(reviewer=reviewer)
    assert isinstance(offer, PairOffer)
    human = Criterion.objects.filter(
        rubric__version_id=offer.task_version_id, kind=CriterionKind.HUMAN
    )
    review_services.pairwise_judge(
        offer_id=offer.pk,
        reviewer=reviewer,
        data=review_services.PairInput(
            winner="a", criterion_winners={c.key: "a" for c in human}, reason="A explains more."
        ),
    )

    snapshot = build(define(catalog.exporter, format="preference"), catalog.exporter)

    pairwise = [r for r in all_rows(snapshot) if r["source"] == "pairwise"]
    assert [(r["chosen_submission_id"], r["rejected_submission_id"]) for r in pairwise] == [
        (offer.submission_a_id, offer.submission_b_id)
    ]


@pytest.fixture
def pasted(catalog):
    """An accepted, reviewed solution to cpu-causal-softmax with a passage of the
    task's expert solution pasted into honest code."""
    slug = "cpu-causal-softmax"
    passage = next(
        p
        for p in guard_check.passages(guard_check.catalog())
        if p.slug == slug and p.path == "solution.py"
    )
    code = guard_check.splice(
        honest_code(slug, "at_parallel_for.py"), passage.text, random.Random(1)
    )
    version = catalog.tasks[slug].current_version
    submission = graded_with(
        version,
        catalog.submitter,
        {"solution.py": code},
        GRADED_TASKS[slug][0],
        model="model-paste",
    )
    assert review_next(catalog.reviewers[1], level="high") == submission
    return submission, passage


def test_a_solution_that_pastes_a_hidden_passage_is_left_out_and_located(catalog, pasted):
    submission, passage = pasted

    snapshot = build(define(catalog.exporter, slug=SFT_SLUG, format="sft"), catalog.exporter)

    assert submission.pk not in {row["submission_id"] for row in all_rows(snapshot)}
    assert len(all_rows(snapshot)) == 6
    assert snapshot.manifest["skipped"] == {"hidden_content": 1}
    (left_out,) = snapshot.left_out.all()
    assert left_out.submission_id == submission.pk
    assert left_out.detail["part"] == "solution.py"
    assert left_out.detail["hidden_path"] == "solution.py"
    first, last = left_out.detail["hidden_lines"]
    assert passage.first <= first <= last < passage.first + len(passage.text.splitlines())


def test_the_snapshot_page_says_why_without_showing_hidden_content(
    catalog, pasted, client, admin_user
):
    submission, passage = pasted
    snapshot = build(define(catalog.exporter, slug=SFT_SLUG, format="sft"), catalog.exporter)
    admin_user.groups.add(*catalog.exporter.groups.all())
    quoted = [line.strip() for line in passage.text.splitlines() if len(line.strip()) > 20]

    client.force_login(catalog.exporter)
    as_exporter = client.get(f"/exports/snapshots/{snapshot.pk}/").content.decode()
    client.force_login(admin_user)
    as_admin = client.get(f"/exports/snapshots/{snapshot.pk}/").content.decode()

    for page in (as_exporter, as_admin):
        assert "Quotes a hidden task file: 1" in page
        assert f"#{submission.pk}" in page
        assert not any(line in page for line in quoted)
    # An exporter opens the example (blind), but does not learn the hidden file's name.
    assert f'href="/submissions/{submission.pk}/"' in as_exporter
    assert "solution.py, lines" not in as_exporter
    client.force_login(catalog.exporter)
    opened = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "data-verdict>" in opened and submission.model_name not in opened
    assert f'href="/submissions/{submission.pk}/"' in as_admin
    assert "(solution.py, lines" in as_admin
