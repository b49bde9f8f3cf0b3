"""Each format's columns and rows: the Arrow schema in the Parquet files, the same
columns in the JSONL files, and what the rows hold."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exports.formats import CHAT, schema_for
from graders import registry
from tests.exports.conftest import (
    SECRETS,
    all_rows,
    build,
    define,
    rows_of,
    snapshot_folder,
)

TASK_COLUMNS = ["task", "task_version", "task_version_id", "kind", "difficulty", "hardware", "tags"]
SUBMISSION_COLUMNS = [
    "submission_id",
    "model",
    "verdict",
    "speedup",
    "metrics",
    "score",
    "scored_by",
    "review_decision",
    "submitted_at",
]
EXPECTED_COLUMNS = {
    "sft": ["messages", *TASK_COLUMNS, *SUBMISSION_COLUMNS, "has_explanation"],
    "preference": [
        "prompt",
        "chosen",
        "rejected",
        *TASK_COLUMNS,
        "source",
        "margin",
        "votes",
        "scored_by",
        *(
            f"{side}_{column}"
            for side in ("chosen", "rejected")
            for column in ("submission_id", "model", "verdict", "score")
        ),
    ],
    "rl": [
        "prompt",
        *TASK_COLUMNS,
        "title",
        "grading",
        "rubric",
        "submissions",
        "accepted",
        "solve_rate",
        "mean_score",
    ],
    "critique": [
        "prompt",
        "completion",
        *TASK_COLUMNS,
        *SUBMISSION_COLUMNS,
        "rubric",
        "automatic",
        "reviews",
    ],
}


def parquet_schema(snapshot, split="train"):
    return pq.read_schema(snapshot_folder(snapshot) / "data" / f"{split}.parquet")


@pytest.mark.parametrize("fmt", ["sft", "preference", "rl", "critique"])
def test_every_split_file_has_the_format_schema_in_parquet_and_jsonl(world, fmt):
    snapshot = build(define(world.owner, format=fmt), world.owner)

    expected = schema_for(fmt, identities=False)
    for split, count in snapshot.manifest["rows"].items():
        assert count > 0, f"the world fills every split ({split})"
        assert parquet_schema(snapshot, split).remove_metadata() == expected
        for row in rows_of(snapshot, split):
            assert list(row) == expected.names
        table = pq.read_table(snapshot_folder(snapshot) / "data" / f"{split}.parquet")
        assert table.num_rows == count
    assert expected.names == EXPECTED_COLUMNS[fmt]


def test_sft_rows_are_a_user_turn_and_an_accepted_assistant_turn(world):
    snapshot = build(define(world.owner, format="sft"), world.owner)

    rows = all_rows(snapshot)
    assert parquet_schema(snapshot).field("messages").type == CHAT
    # Per task: four distinct accepted solutions; the reformatted copy is a duplicate and
    # the wrong answer is not a solution.
    assert len(rows) == 4 * len(world.tasks)
    for row in rows:
        user, assistant = row["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        assert user["content"].startswith("Compute **relu**.")
        assert "### `starter.py`" in user["content"]
        assert row["verdict"] == "accepted"
        assert row["review_decision"] in (None, "accepted")
        assert "```python" in assistant["content"]
        # The grading's figures by name, as the kernel kind declares them.
        metrics = json.loads(row["metrics"])
        assert set(metrics) == {m.name for m in registry.get("kernel").metrics}
        assert metrics["speedup"] == row["speedup"] and row["speedup"] > 0
        assert metrics["checked_calls"] >= 1
    card = (snapshot_folder(snapshot) / "README.md").read_text()
    assert "| kernel | `speedup` | x | higher |" in card


def test_an_explanation_joins_the_answer_only_when_reviewers_approved_it(world):
    snapshot = build(define(world.owner, format="sft"), world.owner)

    rows = all_rows(snapshot)
    explained = [r for r in rows if r["has_explanation"]]
    approved_ids = {world.submissions[t.slug][1].pk for t in world.tasks}
    assert {r["submission_id"] for r in explained} == approved_ids
    for row in explained:
        answer = row["messages"][1]["content"]
        assert answer.startswith("Clamping at zero is relu")
        assert answer.index("Clamping") < answer.index("### `solution.py`")

    without = build(
        define(world.owner, slug="no-prose", format="sft", options={"include_explanations": False}),
        world.owner,
    )
    assert not any(r["has_explanation"] for r in all_rows(without))
    assert not any("Clamping" in r["messages"][1]["content"] for r in all_rows(without))


def test_preference_rows_come_from_pairwise_judgements_and_score_margins(world):
    snapshot = build(define(world.owner, format="preference"), world.owner)

    rows = all_rows(snapshot)
    pairwise = [r for r in rows if r["source"] == "pairwise"]
    margin = [r for r in rows if r["source"] == "score_margin"]
    # One judgement per task: variant 2 preferred over variant 3.
    assert len(pairwise) == len(world.tasks)
    for row in pairwise:
        submissions = world.submissions[row["task"]]
        assert (row["chosen_submission_id"], row["rejected_submission_id"]) == (
            submissions[2].pk,
            submissions[3].pk,
        )
        assert row["votes"] == 1
    assert margin, "reviewed solutions outscore the rejected wrong answer"
    for row in margin:
        assert row["chosen_score"] - row["rejected_score"] >= 0.2 - 1e-9
        assert row["margin"] == pytest.approx(row["chosen_score"] - row["rejected_score"])
    for row in rows:
        assert row["prompt"][0]["role"] == "user"
        assert row["chosen"][0]["role"] == row["rejected"][0]["role"] == "assistant"
        assert row["chosen"] != row["rejected"]


def test_a_wider_margin_makes_fewer_score_pairs(world):
    narrow = build(define(world.owner, slug="narrow", format="preference"), world.owner)
    wide = build(
        define(world.owner, slug="wide", format="preference", options={"margin": 0.85}),
        world.owner,
    )

    def margin_rows(snapshot):
        return [r for r in all_rows(snapshot) if r["source"] == "score_margin"]

    assert len(margin_rows(wide)) < len(margin_rows(narrow))
    assert all(r["margin"] >= 0.85 for r in margin_rows(wide))


def test_rl_rows_carry_the_verifier_columns_and_no_hidden_file(world):
    snapshot = build(define(world.owner, format="rl"), world.owner)

    rows = all_rows(snapshot)
    assert len(rows) == len(world.tasks)
    versions = {t.current_version.pk: t.current_version for t in world.tasks}
    for row in rows:
        version = versions[row["task_version_id"]]
        # The kind's public settings (all of these tasks' small tables).
        assert json.loads(row["grading"]) == version.grading
        rubric = json.loads(row["rubric"])
        assert [c["key"] for c in rubric] == ["correct", "clarity", "integrity", "explanation"]
        assert rubric[0]["points"] == 5 and rubric[2]["points"] == -3
        assert row["submissions"] == 6 and row["accepted"] == 5
        assert row["solve_rate"] == pytest.approx(5 / 6)
        text = json.dumps(row)
        assert not any(secret in text for secret in SECRETS)
        assert "reference.py" not in row["prompt"][0]["content"]


def test_critique_rows_hold_each_reviewers_criterion_scores_and_feedback(world):
    snapshot = build(define(world.owner, format="critique"), world.owner)

    rows = all_rows(snapshot)
    assert len(rows) == 3 * len(world.tasks)  # three reviewed submissions per task
    row = next(r for r in rows if r["submission_id"] == world.submissions["alpha-relu"][1].pk)
    (review,) = row["reviews"]
    assert review["decision"] == "accept"
    assert review["feedback"] == "Clean clamp; handles the ragged shapes."
    points = {c["key"]: c["points"] for c in review["criteria"]}
    assert points == {"correct": 5.0, "clarity": 1.0, "integrity": 0.0, "explanation": 2.0}
    assert review["line_comments"] == [{"path": "solution.py", "line": 1, "body": "Imports ok."}]
    assert review["score"] == pytest.approx(8 / 9)
    assert row["automatic"] == [
        {"key": "correct", "met": True, "points": 5.0},
        {"key": "integrity", "met": False, "points": 0.0},
    ]
    assert row["completion"][0]["content"].count("### `") == 2  # the solution and its prose
    assert [c["key"] for c in json.loads(row["rubric"])] == [
        "correct",
        "clarity",
        "integrity",
        "explanation",
    ]
    rejected = next(r for r in rows if r["verdict"] == "wrong_answer")
    assert rejected["reviews"][0]["decision"] == "reject"
    assert rejected["review_decision"] == "rejected"
    assert (
        parquet_schema(snapshot).field("reviews").type
        == schema_for("critique", identities=False).field("reviews").type
    )


def test_parquet_row_groups_are_written_as_rows_come(world, monkeypatch):
    """Memory holds one row group per split, never the whole split."""
    monkeypatch.setattr("exports.writer.ROW_GROUP_ROWS", 3)
    snapshot = build(define(world.owner, format="sft"), world.owner)

    metadata = pq.read_metadata(snapshot_folder(snapshot) / "data" / "train.parquet")
    assert metadata.num_rows == snapshot.manifest["rows"]["train"] == 16
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [
        3,
        3,
        3,
        3,
        3,
        1,
    ]


def test_the_source_streams_submissions_in_chunks_that_never_span_versions(world):
    from exports.source import submission_chunks, versions_for
    from exports.spec import Filters

    versions = versions_for(Filters(tasks=("alpha-relu", "beta-relu")))
    chunks = list(submission_chunks(versions, Filters(), chunk_size=4))

    assert [(v.slug, len(c)) for v, c in chunks] == [
        ("alpha-relu", 4),
        ("alpha-relu", 2),
        ("beta-relu", 4),
        ("beta-relu", 2),
    ]
    expected = [s.pk for slug in ("alpha-relu", "beta-relu") for s in world.submissions[slug]]
    assert [s.id for _, c in chunks for s in c] == expected
    assert all(s.files for _, c in chunks for s in c)


def test_messages_column_is_a_list_of_role_content_structs():
    assert pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])) == CHAT


def test_critique_automatic_column_is_the_graders_even_where_reviewers_overrode_it(world):
    """A reviewers' consensus that overturned an automatic criterion changes the
    points, not what the grader found; the row shows the grader's finding whatever
    order the scores were written in (here: the run's own score written last, as
    after a re-grade)."""
    from rubrics.models import CriterionScore, ScoreSource

    submission = world.submissions["beta-relu"][0]
    graded_score = CriterionScore.objects.get(
        submission=submission, criterion__key="correct", grading_run__isnull=False
    )
    CriterionScore.objects.create(
        submission=submission,
        criterion=graded_score.criterion,
        source=ScoreSource.HUMAN,
        points=0.0,
        detail="overturned by 1 of 1 reviewer(s)",
    )
    graded_score.delete()
    graded_score.pk = None
    graded_score.save()  # a larger id than the consensus

    snapshot = build(define(world.owner, format="critique"), world.owner)

    row = next(r for r in all_rows(snapshot) if r["submission_id"] == submission.pk)
    assert row["automatic"] == [
        {"key": "correct", "met": True, "points": 5.0},
        {"key": "integrity", "met": False, "points": 0.0},
    ]
