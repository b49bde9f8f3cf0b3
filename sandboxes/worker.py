"""What a grading worker does with one message: plain data in, a report dict out.

The message (built on the trusted side, see ``submissions.services.grading_message``
and ``tasks.validation``) carries the task's manifest fields and files and the
submission's files. This function never raises: a broken message, a task this
host cannot grade, or a failure of the sandbox itself all come back as
``internal_error`` reports, which the trusted side retries and never blames on
the submission.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from . import get_backend
from .base import Limits, SandboxError
from .report import GradeReport, Verdict
from .spec import GradingSpec, SpecError

logger = logging.getLogger(__name__)


def _internal(reason: str) -> dict[str, Any]:
    return GradeReport(verdict=Verdict.INTERNAL_ERROR, reason=reason).to_dict()


def lost_worker_report() -> dict[str, Any]:
    """The report of a grading whose worker died while running it."""
    return _internal("the grading worker was lost while grading this attempt")


def worker_hardware() -> str | None:
    """This worker's hardware class, from BENCHWRIGHT_WORKER_HARDWARE (set per GPU
    worker), else detected by the grader."""
    return os.environ.get("BENCHWRIGHT_WORKER_HARDWARE") or None


def grade_message(message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
    """Grade the submission a message describes and return the report as a dict."""
    try:
        manifest = message["manifest"]
        task_files = dict(message["task_files"])
        submission_files = dict(message["submission_files"])
    except (KeyError, TypeError) as error:
        return _internal(f"malformed grading message: missing {error}")
    kind = manifest.get("kind", "kernel")
    if kind != "kernel":
        return _internal(f"this worker has no grader for {kind} tasks")
    try:
        spec = GradingSpec.from_manifest(manifest, task_files)
    except SpecError as error:
        return _internal(f"the task's grading settings are invalid: {error}")
    try:
        backend = get_backend(backend_name)
        backend.check()
    except (SandboxError, ValueError) as error:
        logger.error("sandbox unavailable: %s", error)
        return _internal(f"sandbox unavailable on this worker: {error}")
    from .kernel import grade  # imports torch: only once a message is known to be sound

    try:
        report = grade(
            spec, submission_files, backend=backend, limits=Limits(), hardware=worker_hardware()
        )
    except Exception as error:  # grade() never raises; this is the last line of defence
        logger.exception("grading raised")
        return _internal(f"the grader failed: {type(error).__name__}")
    return report.to_dict()
