"""What the submissions app announces, for the apps downstream of it (reviews,
webhooks) to follow without submissions importing them.

Each signal is sent once the transaction that made the change has committed,
with ``send_robust``: a receiver's failure is logged and never undoes or fails
the grading that was stored.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

# A grading run was stored and the submission is graded. Keyword: submission_id.
submission_graded = Signal()


def send_on_commit(signal: Signal, sender: Any, **kwargs: Any) -> None:
    """Send ``signal`` when the current transaction commits (at once outside one),
    logging what a receiver raised. Should the process die before then, the periodic
    ``reviews.sweep`` still queues a graded submission for review; its webhook event
    is not sent."""

    def send() -> None:
        for receiver, result in signal.send_robust(sender=sender, **kwargs):
            if isinstance(result, Exception):
                name = getattr(receiver, "__qualname__", receiver)
                logger.error("%s failed for %s", name, kwargs, exc_info=result)

    transaction.on_commit(send)
