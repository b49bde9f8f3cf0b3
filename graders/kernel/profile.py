"""A trace summary for reviewers: the top operators of a few calls of each side.

After the verdict (an accepted submission only, once every timed batch and the
full audit are done, so no timing can change), the grader asks the reference's
harness and then the submission's, each while the other is frozen, for
``PROFILE_CALLS`` more calls of the last timed inputs under ``torch.profiler``
(``runner.profile_operators``: CPU activities, CUDA ones too on a CUDA host).

Where the summary is made: inside the harness, from the profiler's
``key_averages``, and sent back as one small reply. Writing the Chrome trace to
the work dir and parsing it here (``graders.profiling.trace.load_trace``) was
the other choice; it was not taken because it buys no trust: the trace file is
written by the same process, which the submission controls, as the summary is,
so either can be forged, and a forged profile only misleads about the
submission's own code. What must hold is that nothing the process sends can
hurt the grader, and a reply is already read with a size cap, a depth-limited
decoder and exact types checked here (``_side``), where a trace file would need
collecting from the sandbox at its end and a parser for up to megabytes of
hostile JSON. Self times per operator also come straight from the profiler's
own nesting rather than from one rebuilt here.

The summary is advisory: any failure (a reply that is late, malformed or an
error, a process that died) leaves that side's summary empty with a note, and
never changes the verdict (``_Grading.close`` keeps an accepted verdict when a
limit that kills at once was hit after the profile began).
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import TYPE_CHECKING, Any

from graders.verdicts import Verdict
from sandboxes.base import MiB, SandboxError
from sandboxes.cgroups import FreezeTimeout

from .side import Side, SideFailure, clean_text

if TYPE_CHECKING:
    from .grading import _Grading

# About 2 s of a grading's wall time on the catalog's CPU tasks, most of it the profiler
# starting up in each process (docs/architecture.md, "Profile summary"): small enough to
# run on every accepted grading, so there is no setting to switch it off.
PROFILE_CALLS = 3
TOP_OPERATORS = 15
# Less of the grading's wall time than this left: no profile (it must not end in a
# wall-time kill).
MIN_LEFT_S = 30.0
REQUEST_S = 60.0  # per side, plus the task's call timeout per call
NAME_CAP = 200
MAX_COUNT = 10**9
MAX_US = 1e15


def empty(note: str) -> dict[str, Any]:
    return {"operators": [], "note": note}


def attach(grading: _Grading) -> None:
    """Profile both sides of an accepted grading and put the summary in its report.
    Never raises: the summary is advisory."""
    began = time.monotonic()
    report = grading.report
    summary: dict[str, Any] = {
        "calls": PROFILE_CALLS,
        "device": grading.device,
        # The reference's operators say what the reference does: a solver sees them only
        # where the task shows its reference (``KernelKind.public_details``).
        "reference_public": grading.spec.reference_path in grading.spec.shared_files,
        "reference": empty("not profiled"),
        "submission": empty("not profiled"),
    }
    report.profile = summary
    try:
        for key, side in (("reference", grading.ref), ("submission", grading.sub)):
            left = grading.deadline - time.monotonic()
            if left < MIN_LEFT_S:
                summary[key] = empty("not profiled: too little of the grading's wall time left")
                continue
            if side is None:
                continue
            grading.profile_started = True
            summary[key] = _profile(grading, side, min(_wanted(grading), left - 10.0))
    except Exception as exc:  # the grader's own failure: the summary stays partial
        summary["note"] = f"the profile summary failed in the grader: {type(exc).__name__}"
        report.operator_notes += f"\nprofile summary: {type(exc).__name__}: {exc}"
    grading.phases["profile"] = time.monotonic() - began


def _wanted(grading: _Grading) -> float:
    return REQUEST_S + PROFILE_CALLS * grading.spec.timing.call_timeout_s


def _profile(grading: _Grading, side: Side, timeout_s: float) -> dict[str, Any]:
    """One side's summary: thawed for the request, frozen again after it (best effort:
    nothing is measured any more)."""
    trusted = side.role != "submission"
    try:
        side.thaw()
        try:
            reply = side.request(
                "profile_ops",
                {"calls": PROFILE_CALLS, "top": TOP_OPERATORS},
                timeout_s=timeout_s,
                max_bytes=MiB,
            )
        finally:
            if side.process is not None and not side.killed_by_watchdog:
                with contextlib.suppress(FreezeTimeout, SandboxError, OSError):
                    side.freeze()
    except SideFailure as failure:
        if trusted:
            # The reference's error may quote hidden files: its notes are operators' only.
            grading.report.operator_notes += f"\nprofiling the reference: {failure}"
            return empty(f"not profiled: the reference process failed ({failure.kind})")
        return empty(f"not profiled: {_failure_note(failure)}")
    except (SandboxError, OSError) as exc:
        return empty(f"not profiled: the sandbox could not be resumed ({type(exc).__name__})")
    try:
        return _side(reply.header.get("summary"))
    except ValueError as exc:
        return empty(f"no summary: the {side.role} process sent a malformed one ({exc})")


def _failure_note(failure: SideFailure) -> str:
    if failure.kind == "error":
        error = failure.error
        where = clean_text(error.get("type", ""), 100)
        return f"the profiled calls failed ({where}: {clean_text(error.get('message', ''), 300)})"
    return f"the submission process did not answer ({failure.kind})"


def _side(value: Any) -> dict[str, Any]:
    """The harness's summary, checked field by field (exact types, finite, bounded) and
    turned into figures per call."""
    if type(value) is not dict:
        raise ValueError("not an object")
    calls = _count(value.get("calls"), "calls")
    if calls != PROFILE_CALLS:
        raise ValueError(f"{calls} calls profiled, not {PROFILE_CALLS}")
    rows = value.get("operators")
    if type(rows) is not list or len(rows) > TOP_OPERATORS:
        raise ValueError("operators is not a short list")
    operators = []
    for row in rows:
        if type(row) is not list or len(row) != 5 or type(row[0]) is not str:
            raise ValueError("an operator is not [name, count, self CPU, self CUDA, total]")
        operators.append(
            {
                "name": clean_text(row[0], NAME_CAP).replace("\n", " "),
                "count": _count(row[1], "count") / calls,
                "self_cpu_us": _us(row[2]) / calls,
                "self_cuda_us": _us(row[3]) / calls,
                "total_cpu_us": _us(row[4]) / calls,
            }
        )
    launches = value.get("launches")
    return {
        "operators": operators,
        "distinct_operators": _count(value.get("distinct"), "distinct"),
        "cpu_us_per_call": _us(value.get("call_cpu_us")) / calls,
        "outside_us_per_call": _us(value.get("outside_us")) / calls,
        "ops_per_call": _count(value.get("direct_ops"), "direct_ops") / calls,
        "launches_per_call": None if launches is None else _count(launches, "launches") / calls,
        "note": "",
    }


def _count(value: Any, name: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise ValueError(f"{name} is not a count")
    return value


def _us(value: Any) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= MAX_US:
        raise ValueError("a time is not a finite number of microseconds")
    return float(value)


# The limits whose breach ends the process when it happens (memory, CPU and wall time,
# too many processes: the supervisor kills the sandbox).
KILLS_AT_ONCE = frozenset({"wall_time", "cpu_time", "memory", "processes"})


def keeps_verdict(grading: _Grading, limit: str | None) -> bool:
    """Whether a limit the submission's sandbox reports is the profile's doing, and so
    leaves the verdict alone: the verdict was accepted before the profile began, and
    the limit is one that kills at once (had it been hit earlier, the process would
    not have answered the audit after the timed calls).

    Not the output and file size limits: the sandbox keeps a process running past
    its output cap, and a write past the file size limit fails (Python ignores
    SIGXFSZ) without ending it; both are reported at the end, so when they were
    reached cannot be told. A submission that floods its output while profiled
    (through a copy of fd 1 made before the harness silenced it, say) loses its
    verdict by its own doing; it cannot gain one."""
    return (
        grading.profile_started
        and grading.report.verdict == Verdict.ACCEPTED
        and limit in KILLS_AT_ONCE
    )
