"""The result of one grading: plain data that travels through the broker as JSON.

``GradeReport.to_dict()`` is what is stored; ``from_dict`` rebuilds it.
``operator_notes`` may quote hidden task files (text from the reference
process): what a solver may see is the kernel kind's public report
(``graders.kernel.kind.KernelKind.public_details``), by allow-list.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from graders.reports import storable
from graders.verdicts import Verdict

# The most characters of free text a report keeps: a submission decides much of it
# (a dict key of seven million characters once made a 14 MB report).
TEXT_CAPS = {"reason": 4000, "trial_message": 2000, "operator_notes": 20000}


def _capped(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1] + "\N{HORIZONTAL ELLIPSIS}"


def _finite_or_none(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass
class TrialResult:
    """One correctness trial: one call on fresh inputs, compared with the reference."""

    shape: str
    trial: int
    ok: bool
    seed: str = ""  # hex; chosen per grading by the trusted side
    max_abs_error: float | None = None  # None when not finite or not computed
    max_rel_error: float | None = None
    shapes: list[list[int]] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["max_abs_error"] = _finite_or_none(self.max_abs_error)
        data["max_rel_error"] = _finite_or_none(self.max_rel_error)
        data["message"] = _capped(self.message, TEXT_CAPS["trial_message"])
        return data


@dataclass
class TimingStats:
    """Per-call times of one side, in seconds."""

    median_s: float
    spread: float  # (max - min) / median of the batch samples
    count: int  # batches
    calls: int  # timed calls in all
    ci_low_s: float
    ci_high_s: float
    samples_s: list[float] = field(default_factory=list)  # per-call time of each batch

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TimingResult:
    timing_mode: str  # wall | cuda_events | interpreter
    method: str
    shape: str
    reference: TimingStats
    submission: TimingStats
    speedup: float
    speedup_ci: tuple[float, float]
    significant: bool  # the confidence intervals of the two medians separate
    scored: bool  # False for interpreter timings: never used for speedup criteria
    calls_per_batch: int
    witness: dict[str, Any] = field(default_factory=dict)
    unscored_reason: str = ""  # why ``scored`` is False

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["speedup_ci"] = list(self.speedup_ci)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimingResult:
        values = dict(data)
        values["reference"] = TimingStats(**values["reference"])
        values["submission"] = TimingStats(**values["submission"])
        values["speedup_ci"] = tuple(values["speedup_ci"])
        return cls(**values)


@dataclass
class Integrity:
    checks: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.violations


@dataclass
class GradeReport:
    verdict: Verdict
    reason: str
    correctness: list[TrialResult] = field(default_factory=list)
    timing: TimingResult | None = None
    integrity: Integrity = field(default_factory=Integrity)
    hardware: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)  # capped tails of the submission's output
    artifacts: dict[str, str] = field(default_factory=dict)
    harness_version: str = ""
    duration_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    checked_calls: int = 0  # every call whose output was compared, timed ones included
    operator_notes: str = ""  # may quote hidden files: never shown to solvers
    # The trace summary for reviewers (``graders.kernel.profile``): empty when not profiled.
    profile: dict[str, Any] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        return self.timing.speedup if self.timing else None

    @property
    def timing_mode(self) -> str | None:
        return self.timing.timing_mode if self.timing else None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-like data that can always be stored (``storable``: what
        the submission printed or named may hold NUL characters or lone surrogates),
        its free text capped (``TEXT_CAPS``)."""
        return storable(
            {
                "verdict": self.verdict.value,
                "reason": _capped(self.reason, TEXT_CAPS["reason"]),
                "speedup": self.speedup,
                "timing_mode": self.timing_mode,
                "correctness": [trial.to_dict() for trial in self.correctness],
                "timing": self.timing.to_dict() if self.timing else None,
                "integrity": dataclasses.asdict(self.integrity),
                "hardware": dict(self.hardware),
                "logs": dict(self.logs),
                "artifacts": dict(self.artifacts),
                "harness_version": self.harness_version,
                "duration_s": self.duration_s,
                "phases": dict(self.phases),
                "checked_calls": self.checked_calls,
                "operator_notes": _capped(self.operator_notes, TEXT_CAPS["operator_notes"]),
                "profile": dict(self.profile) if self.profile else None,
            }
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GradeReport:
        timing = data.get("timing")
        return cls(
            verdict=Verdict(data["verdict"]),
            reason=data["reason"],
            correctness=[TrialResult(**trial) for trial in data.get("correctness", [])],
            timing=TimingResult.from_dict(timing) if timing else None,
            integrity=Integrity(**data.get("integrity", {})),
            hardware=dict(data.get("hardware", {})),
            logs=dict(data.get("logs", {})),
            artifacts=dict(data.get("artifacts", {})),
            harness_version=data.get("harness_version", ""),
            duration_s=float(data.get("duration_s", 0.0)),
            phases=dict(data.get("phases", {})),
            checked_calls=int(data.get("checked_calls", 0)),
            operator_notes=data.get("operator_notes", ""),
            profile=dict(data.get("profile") or {}),
        )
