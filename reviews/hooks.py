"""What other apps call when something happens that the reviews app follows.

Kept free of module-level imports from the rest of the app, so that
``submissions.services`` can import it without an import cycle.
"""

from __future__ import annotations

from django.db import transaction


def submission_graded(submission_id: int) -> None:
    """A grading was stored: the submission enters the review queue once that
    transaction commits. Should the process die before then, the periodic
    ``reviews.sweep`` job enters it later."""

    def enter() -> None:
        from . import services

        services.review_queue_enter(submission_id=submission_id)

    # robust: a problem here is logged, never turned into a failed grading.
    transaction.on_commit(enter, robust=True)
