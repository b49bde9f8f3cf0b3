"""Webhook events for what other apps announce."""

from __future__ import annotations

from typing import Any


def announce_graded(sender: Any, *, submission_id: int, **kwargs: Any) -> None:
    from . import services

    services.submission_graded(submission_id=submission_id)


def announce_reviewed(sender: Any, *, submission_id: int, **kwargs: Any) -> None:
    from . import services

    services.submission_reviewed(submission_id=submission_id)
