"""What a grading worker does with one message: plain data in, a report dict out.

The message (built on the trusted side, see ``submissions.services.grading_message``
and ``tasks.validation``) carries the task's manifest fields and files and the
submission's files. The task's kind picks the grader (``graders.registry``). This
function never raises: a broken message, a kind this worker has no grader for, or
a failure of the grader itself all come back as ``internal_error`` reports, which
the trusted side retries and never blames on the submission. Every report comes
back storable (``graders.reports``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from . import registry
from .reports import storable
from .verdicts import Verdict

logger = logging.getLogger(__name__)


def internal_report(reason: str) -> dict[str, Any]:
    """The report of a grading the platform failed (any kind: the fields every report has)."""
    return {
        "verdict": Verdict.INTERNAL_ERROR.value,
        "reason": reason,
        "integrity": {"checks": [], "violations": []},
        "hardware": {},
        "logs": {},
        "duration_s": 0.0,
        "operator_notes": "",
    }


class CannotGrade(Exception):
    """A grading the platform cannot run (a broken message, no sandbox); the message
    is the reason of its ``internal_error`` report."""


def message_files(message: Mapping[str, Any]) -> tuple[Any, dict[str, str], dict[str, str]]:
    """A grading message's manifest, task files and submission files."""
    try:
        return (
            message["manifest"],
            dict(message["task_files"]),
            dict(message["submission_files"]),
        )
    except (KeyError, TypeError) as error:
        raise CannotGrade(f"malformed grading message: missing {error}") from None


def ready_backend(backend_name: str) -> Any:
    """The named sandbox backend, checked usable on this worker."""
    from sandboxes import get_backend
    from sandboxes.base import SandboxError

    try:
        backend = get_backend(backend_name)
        backend.check()
    except (SandboxError, ValueError) as error:
        logger.error("sandbox unavailable: %s", error)
        raise CannotGrade(f"sandbox unavailable on this worker: {error}") from None
    return backend


def lost_worker_report() -> dict[str, Any]:
    """The report of a grading whose worker died while running it."""
    return internal_report("the grading worker was lost while grading this attempt")


def grade_message(message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
    """Grade the submission a message describes and return the report as a dict."""
    try:
        manifest = message["manifest"]
        kind_name = manifest.get("kind", "kernel")
    except (KeyError, TypeError, AttributeError) as error:
        return internal_report(f"malformed grading message: missing {error}")
    try:
        kind = registry.get(kind_name)
    except registry.UnknownKind:
        return internal_report(f"this worker has no grader for {kind_name} tasks")
    try:
        report = kind.grade(message, backend_name=backend_name)
    except Exception as error:  # grade() never raises; this is the last line of defence
        logger.exception("grading raised")
        return internal_report(f"the {kind_name} grader failed: {type(error).__name__}")
    if not isinstance(report, Mapping) or not isinstance(report.get("verdict"), str):
        return internal_report(f"the {kind_name} grader returned no report")
    return storable(report)
