"""What the reviews app does when other apps announce something."""

from __future__ import annotations

from typing import Any


def queue_graded_submission(sender: Any, *, submission_id: int, **kwargs: Any) -> None:
    """A grading was stored (``submissions.signals.submission_graded``): the submission
    enters the review queue if reviewers should see it."""
    from . import services

    services.review_queue_enter(submission_id=submission_id)
