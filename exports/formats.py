"""The four dataset formats: their columns (an explicit Arrow schema each) and how
one row is made.

They follow TRL's dataset conventions, conversational variants:

- ``sft``: ``messages``, a user turn (statement and prompt files) and an
  assistant turn (an accepted solution, after its reviewer-approved
  explanation when there is one) — TRL's SFTTrainer reads it as it is.
- ``preference``: ``prompt`` (the user turn), ``chosen`` and ``rejected``
  (assistant turns) — DPOTrainer and RewardTrainer read it; ``source`` says
  whether a reviewer preferred one (``pairwise``) or their scores differ by at
  least the margin (``score_margin``).
- ``rl``: ``prompt`` plus the verifier columns a reward function needs to call
  the grader: ``task_version_id``, ``grading`` (the task's grading settings,
  JSON) and ``rubric`` (JSON). One row per task version; never a hidden file.
- ``critique``: ``prompt`` and ``completion`` (TRL's prompt-completion form)
  plus the reviews: each reviewer's decision, rubric total, feedback,
  per-criterion points and comments, and line comments; the ``rubric`` as
  JSON, as in ``rl`` (the same text in every row of a version, which Parquet
  stores once per page).

Every row also carries the task's metadata; rows made from submissions carry
the submission's id, model, verdict, speedup (kernel tasks), metrics (a JSON
object: the grading's figures by name, as the task's kind declares them; the
dataset card lists each name's unit and direction) and score. Submitter identities
(``submitter``, ``run_id``, ``labels``) are columns only when a snapshot
includes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .models import ExportFormat
from .source import SubmissionData, VersionData
from .text import canonical_json
from .writer import finite

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
CHAT = pa.list_(MESSAGE)

TASK_FIELDS = [
    ("task", pa.string()),
    ("task_version", pa.int32()),
    ("task_version_id", pa.int64()),
    ("kind", pa.string()),
    ("difficulty", pa.string()),
    ("hardware", pa.string()),
    ("tags", pa.list_(pa.string())),
]
SUBMISSION_FIELDS = [
    ("submission_id", pa.int64()),
    ("model", pa.string()),
    ("verdict", pa.string()),
    ("speedup", pa.float64()),
    ("metrics", pa.string()),
    ("score", pa.float64()),
    ("scored_by", pa.string()),
    ("review_decision", pa.string()),
    ("submitted_at", pa.string()),
]
IDENTITY_FIELDS = [("submitter", pa.string()), ("run_id", pa.string()), ("labels", pa.string())]
AUTOMATIC = pa.struct([("key", pa.string()), ("met", pa.bool_()), ("points", pa.float64())])
REVIEW = pa.struct(
    [
        ("decision", pa.string()),
        ("score", pa.float64()),
        ("feedback", pa.string()),
        (
            "criteria",
            pa.list_(
                pa.struct(
                    [
                        ("key", pa.string()),
                        ("points", pa.float64()),
                        ("comment", pa.string()),
                        ("overturned", pa.bool_()),
                    ]
                )
            ),
        ),
        (
            "line_comments",
            pa.list_(
                pa.struct([("path", pa.string()), ("line", pa.int32()), ("body", pa.string())])
            ),
        ),
    ]
)


def _side(prefix: str, fields: list[tuple[str, pa.DataType]]) -> list[tuple[str, pa.DataType]]:
    return [(f"{prefix}_{name}", kind) for name, kind in fields]


def schema_for(fmt: str, *, identities: bool) -> pa.Schema:
    if fmt == ExportFormat.SFT:
        fields = [("messages", CHAT), *TASK_FIELDS, *SUBMISSION_FIELDS]
        fields.append(("has_explanation", pa.bool_()))
        fields += IDENTITY_FIELDS if identities else []
    elif fmt == ExportFormat.PREFERENCE:
        side = [("submission_id", pa.int64()), ("model", pa.string())]
        side += [("verdict", pa.string()), ("score", pa.float64())]
        side += IDENTITY_FIELDS if identities else []
        fields = [("prompt", CHAT), ("chosen", CHAT), ("rejected", CHAT), *TASK_FIELDS]
        fields += [("source", pa.string()), ("margin", pa.float64()), ("votes", pa.int32())]
        fields += [("scored_by", pa.string())]
        fields += _side("chosen", side) + _side("rejected", side)
    elif fmt == ExportFormat.RL:
        fields = [("prompt", CHAT), *TASK_FIELDS, ("title", pa.string())]
        fields += [("grading", pa.string()), ("rubric", pa.string())]
        fields += [("submissions", pa.int64()), ("accepted", pa.int64())]
        fields += [("solve_rate", pa.float64()), ("mean_score", pa.float64())]
    elif fmt == ExportFormat.CRITIQUE:
        fields = [("prompt", CHAT), ("completion", CHAT), *TASK_FIELDS, *SUBMISSION_FIELDS]
        fields += [("rubric", pa.string()), ("automatic", pa.list_(AUTOMATIC))]
        fields += [("reviews", pa.list_(REVIEW))]
        fields += IDENTITY_FIELDS if identities else []
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return pa.schema(fields)


# Columns shared by the formats -----------------------------------------------------------------


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def task_columns(version: VersionData) -> dict[str, Any]:
    return {
        "task": version.slug,
        "task_version": version.number,
        "task_version_id": version.id,
        "kind": version.kind,
        "difficulty": version.difficulty,
        "hardware": version.hardware,
        "tags": version.tags,
    }


def submission_columns(submission: SubmissionData) -> dict[str, Any]:
    return {
        "submission_id": submission.id,
        "model": submission.model,
        "verdict": submission.verdict,
        "speedup": finite(submission.speedup),
        "metrics": canonical_json(
            {name: finite(value) for name, value in sorted(submission.metrics.items())}
        ),
        "score": submission.score,
        "scored_by": submission.scored_by,
        "review_decision": submission.decision,
        "submitted_at": submission.submitted_at,
    }


def identity_columns(identity: tuple[str, str, Any], prefix: str = "") -> dict[str, Any]:
    username, run_id, labels = identity
    return {
        f"{prefix}submitter": username,
        f"{prefix}run_id": run_id,
        f"{prefix}labels": canonical_json(labels or {}),
    }


# Rows ------------------------------------------------------------------------------------------


def sft_row(
    version: VersionData, submission: SubmissionData, solution: str, *, explained: bool
) -> dict[str, Any]:
    row: dict[str, Any] = {"messages": user(version.prompt) + assistant(solution)}
    row |= task_columns(version) | submission_columns(submission)
    row["has_explanation"] = explained
    if submission.identity is not None:
        row |= identity_columns(submission.identity)
    return row


@dataclass(frozen=True, slots=True)
class Side:
    """One submission of a preference pair, as read in the first pass."""

    id: int
    model: str
    verdict: str
    score: float
    scored_by: str
    identity: tuple[str, str, Any] | None


def preference_row(
    version: VersionData,
    chosen: tuple[Side, str],
    rejected: tuple[Side, str],
    *,
    source: str,
    votes: int,
) -> dict[str, Any]:
    (good, good_text), (bad, bad_text) = chosen, rejected
    row: dict[str, Any] = {
        "prompt": user(version.prompt),
        "chosen": assistant(good_text),
        "rejected": assistant(bad_text),
    }
    row |= task_columns(version)
    row |= {
        "source": source,
        "margin": good.score - bad.score,
        "votes": votes,
        "scored_by": good.scored_by if good.scored_by == bad.scored_by else "mixed",
    }
    for prefix, side in (("chosen", good), ("rejected", bad)):
        row |= {
            f"{prefix}_submission_id": side.id,
            f"{prefix}_model": side.model,
            f"{prefix}_verdict": side.verdict,
            f"{prefix}_score": side.score,
        }
        if side.identity is not None:
            row |= identity_columns(side.identity, prefix=f"{prefix}_")
    return row


@dataclass(slots=True)
class VersionStats:
    submissions: int = 0
    accepted: int = 0
    score_sum: float = 0.0


def rl_row(version: VersionData, stats: VersionStats) -> dict[str, Any]:
    row: dict[str, Any] = {"prompt": user(version.prompt)}
    row |= task_columns(version)
    row |= {
        "title": version.title,
        "grading": canonical_json(version.grading),
        "rubric": version.rubric,
        "submissions": stats.submissions,
        "accepted": stats.accepted,
        "solve_rate": stats.accepted / stats.submissions if stats.submissions else None,
        "mean_score": stats.score_sum / stats.submissions if stats.submissions else None,
    }
    return row


def critique_row(version: VersionData, submission: SubmissionData, solution: str) -> dict[str, Any]:
    row: dict[str, Any] = {"prompt": user(version.prompt), "completion": assistant(solution)}
    row |= task_columns(version) | submission_columns(submission)
    row["rubric"] = version.rubric
    row["automatic"] = [
        # The grader's own points; reviewers' overturns are in their reviews.
        {
            "key": c.key,
            "met": submission.met[c.key],
            "points": float(c.points) if submission.met[c.key] else 0.0,
        }
        for c in version.criteria
        if c.key in submission.met
    ]
    row["reviews"] = [
        {
            "decision": review.decision,
            "score": review.score,
            "feedback": review.feedback,
            "criteria": review.criteria,
            "line_comments": review.line_comments,
        }
        for review in submission.reviews
    ]
    if submission.identity is not None:
        row |= identity_columns(submission.identity)
    return row
