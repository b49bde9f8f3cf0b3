"""The one verdict vocabulary, shared by every task kind.

A grading ends in exactly one verdict. Most are about the submission; two are
not, and nothing may blame a solver for them: ``task_error`` (the task's own
reference or setup failed) and ``internal_error`` (the platform failed; the
grading is retried within a budget). Every app takes the names from here.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """Grading verdicts; values match the ``choices`` a Django model field takes."""

    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
    INTEGRITY_VIOLATION = "integrity_violation"
    NEEDS_HARDWARE = "needs_hardware"
    # The task's own reference raised: a problem with the task, not the submission.
    TASK_ERROR = "task_error"
    INTERNAL_ERROR = "internal_error"

    def __str__(self) -> str:
        return self.value

    @property
    def label(self) -> str:
        return self.value.replace("_", " ").capitalize()

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        return [(member.value, member.label) for member in cls]

    @classmethod
    def values(cls) -> list[str]:
        return [member.value for member in cls]


# Verdicts about the platform or the task, never about the submission: no example
# solution of a bundle may be expected to get one, exports carry no row with one, and
# a submission that gets one is not the solver's failure.
NOT_THE_SUBMISSIONS = frozenset({Verdict.TASK_ERROR, Verdict.INTERNAL_ERROR})

# The verdicts a submission can earn, in the vocabulary's order.
SUBMISSION_VERDICTS: tuple[str, ...] = tuple(
    verdict.value for verdict in Verdict if verdict not in NOT_THE_SUBMISSIONS
)
