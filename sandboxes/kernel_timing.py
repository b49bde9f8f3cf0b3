"""Timing a kernel submission against its reference: warm-up, interleaved
batches, statistics, and the cross-checks of the harness's clock against the
grader's own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import timing as stats
from .kernel_rules import SideBatch
from .report import TimingResult, TimingStats
from .spec import ShapeSet

if TYPE_CHECKING:
    from .kernel import _Grading

BATCH_TARGET_S = 0.05  # aim for batches this long, so IPC overhead stays small
MAX_CALLS_PER_BATCH = 200
# Inputs and outputs of one batch are held at once and each crosses two pipes.
BATCH_MEMORY_BYTES = 128 * 1024 * 1024
# What a busy host may add to one batch's wall time by scheduling alone (measured
# up to ~15 ms with 6-8 runnable processes on 2 cores); the witness checks allow it.
SCHEDULING_SLACK_S = 0.05


@dataclass
class Samples:
    """One side's timings, one entry per batch."""

    # The timing figure: the batch's median call, by the harness's clock (or CUDA events).
    per_call: list[float] = field(default_factory=list)
    # The harness's clock, the batch's calls summed; and the grader's wall clock around it.
    inside: list[float] = field(default_factory=list)
    outside: list[float] = field(default_factory=list)
    prepare: list[float] = field(default_factory=list)
    outputs: list[float] = field(default_factory=list)
    calls: int = 0

    def add(self, batch: SideBatch, events: bool) -> None:
        times = batch.event_times if events and batch.event_times else batch.times
        self.per_call.append(stats.median(times))
        self.inside.append(batch.inside_s)
        self.outside.append(batch.window_s)
        self.prepare.append(batch.prepare_s)
        self.outputs.append(batch.outputs_s)
        self.calls += batch.calls

    def stats(self, seed: int) -> TimingStats:
        low, high = stats.bootstrap_median_ci(self.per_call, seed=seed)
        return TimingStats(
            median_s=stats.median(self.per_call),
            spread=stats.spread(self.per_call),
            count=len(self.per_call),
            calls=self.calls,
            ci_low_s=low,
            ci_high_s=high,
            samples_s=list(self.per_call),
        )

    def overheads(self) -> list[float]:
        """Per batch, wall time the harness's clock does not account for."""
        return [outside - inside for outside, inside in zip(self.outside, self.inside, strict=True)]


TIMING_METHODS = {
    "wall": (
        "per-call wall time from the harness's clock (captured before the submission was "
        "imported), median per batch of back-to-back calls on fresh inputs, batches interleaved "
        "with the reference; the grader's own wall clock around each batch as the witness"
    ),
    "cuda_events": (
        "CUDA events around each call after a full synchronise and an L2 flush (2x L2); the "
        "grader's wall clock around each batch and the profiler's device time as witnesses"
    ),
    "interpreter": (
        "Triton interpreter on a CPU host: a short wall-time run, not a performance measurement"
    ),
}


# Figures reported per side: (name in the report, Samples field).
WITNESS_FIGURES = (
    ("batch_wall", "outside"),
    ("batch_calls", "inside"),
    ("prepare", "prepare"),
    ("outputs", "outputs"),
)


class Timing:
    """Warm-up, then interleaved batches until the medians are tight or the budget is spent."""

    def __init__(self, grading: _Grading) -> None:
        self.g = grading
        self.settings = grading.spec.timing
        self.mode = grading.mode
        self.events = self.mode == "cuda_events"
        self.ref = Samples()
        self.sub = Samples()
        self.calls_per_batch = 1
        self.profiled_s: float | None = None

    def run(self) -> TimingResult:
        shape = self.g.timing_shape()
        if shape is not self.g.current_shape:
            self.g.setup(shape)
        estimate = self._warm_up()
        self.calls_per_batch = self._calls_per_batch(*estimate)
        self._batches(max(estimate))
        if self.mode != "interpreter":
            self._cross_checks()
        return self._result(shape)

    def _warm_up(self) -> tuple[float, float]:
        warmup = (
            min(self.settings.warmup, 1) if self.mode == "interpreter" else self.settings.warmup
        )
        pair = self.g.run_pair(max(warmup, 1), events=self.events)
        self.g.require_correct(pair, "warm-up")
        assert pair.ref is not None and pair.sub is not None
        return pair.ref.window_s / pair.ref.calls, pair.sub.window_s / pair.sub.calls

    def _calls_per_batch(self, ref_s: float, sub_s: float) -> int:
        if self.mode == "interpreter":
            return 1
        fastest, slowest = max(min(ref_s, sub_s), 1e-7), max(ref_s, sub_s, 1e-7)
        wanted = BATCH_TARGET_S / fastest
        by_budget = self.settings.budget_s / (2 * self.settings.min_batches * slowest)
        per_call_bytes = self.g.input_bytes.get(
            self.g.current_shape.name if self.g.current_shape else "", 0
        )
        per_call_bytes += self.g.output_bytes_per_call
        by_memory = BATCH_MEMORY_BYTES / max(per_call_bytes * 2, 1)
        return int(max(1, min(wanted, by_budget, by_memory, MAX_CALLS_PER_BATCH)))

    def _batches(self, slowest_s: float) -> None:
        if self.mode == "interpreter":
            limit, minimum, budget = 2, 2, self.settings.budget_s
        else:
            limit, minimum, budget = (
                self.settings.max_batches,
                self.settings.min_batches,
                self.settings.budget_s,
            )
        began = time.monotonic()
        for index in range(limit):
            pair = self.g.run_pair(
                self.calls_per_batch,
                sub_first=index % 2 == 1,
                events=self.events,
                estimate_s=slowest_s,
                profile=self.events and index == 0,
            )
            if pair.sub is not None and pair.sub.device_time_s is not None:
                self.profiled_s = pair.sub.device_time_s
            self.g.require_correct(pair, f"timed batch {index + 1}")
            assert pair.ref is not None and pair.sub is not None
            self.ref.add(pair.ref, self.events)
            self.sub.add(pair.sub, self.events)
            done = index + 1
            spent = time.monotonic() - began
            pair_s = spent / done
            if self.g.deadline - time.monotonic() < 3 * pair_s + 5.0:
                break
            if done >= minimum and (spent >= budget or self._converged()):
                break

    def _converged(self) -> bool:
        target = self.settings.target_rel_error
        return (
            stats.relative_half_width(self.ref.per_call) <= target
            and stats.relative_half_width(self.sub.per_call) <= target
        )

    def _cross_checks(self) -> None:
        """The harness's clock and the untimed phases against the grader's witness.

        Per batch, the grader's wall time minus the calls the harness timed is
        overhead (messages, output samples, scheduling). It is alike for both
        sides, which run the same harness on the same sizes; a clock that runs
        slow shows as extra overhead on the submission's side. Work hidden
        before or after the timed window shows as a slower prepare or outputs
        phase than the reference's for the same data. Batches are compared by
        their minimum, or in pairs adjacent in time: a busy host only adds.
        """
        self._clock_checks()
        self._profiler_check()
        self._hidden_work_checks()

    def _clock_checks(self) -> None:
        self.g.report.integrity.checks.append("in-process call times agree with the grader's clock")
        for inside, outside in zip(self.sub.inside, self.sub.outside, strict=True):
            if inside > 1.05 * outside + 1e-3:
                raise self.g.violation(
                    f"the submission's in-process clock counted {inside:.3g} s in a batch "
                    f"the grader measured at {outside:.3g} s: a clock was tampered with"
                )
        excess = min(self.sub.overheads()) - min(self.ref.overheads())
        if excess > max(0.5 * min(self.sub.outside), SCHEDULING_SLACK_S):
            inside, outside = stats.median(self.sub.inside), stats.median(self.sub.outside)
            raise self.g.violation(
                f"the submission's in-process clock reports {inside:.3g} s per batch but the "
                f"grader measured {outside:.3g} s: a clock was tampered with"
            )

    def _hidden_work_checks(self) -> None:
        self.g.report.integrity.checks.append("no work hidden before or after the timed window")
        window = min(self.sub.outside)
        for phase in ("prepare", "outputs"):
            sub_s, ref_s = getattr(self.sub, phase), getattr(self.ref, phase)
            excess = min(s - r for s, r in zip(sub_s, ref_s, strict=True))
            if excess > max(0.5 * window, min(ref_s)) + SCHEDULING_SLACK_S:
                raise self.g.violation(
                    f"the submission spent {min(sub_s):.3g} s per batch in the untimed {phase} "
                    f"phase against {min(ref_s):.3g} s for the reference: work done outside "
                    "the timed window"
                )

    def _profiler_check(self) -> None:
        """GPU hosts only: CUDA event times against the profiler's device time."""
        if not self.events or self.profiled_s is None:
            return
        self.g.report.integrity.checks.append(
            "CUDA event times agree with the profiler's device time"
        )
        events_s = stats.median(self.sub.per_call)
        if events_s < 0.5 * self.profiled_s:
            raise self.g.violation(
                f"CUDA events report {events_s:.3g} s per call but the profiler measured "
                f"{self.profiled_s:.3g} s of device time: event timing was tampered with"
            )

    def _result(self, shape: ShapeSet) -> TimingResult:
        reference = self.ref.stats(seed=1)
        submission = self.sub.stats(seed=2)
        ref_ci = (reference.ci_low_s, reference.ci_high_s)
        sub_ci = (submission.ci_low_s, submission.ci_high_s)
        scored = self.mode != "interpreter"
        return TimingResult(
            timing_mode=self.mode,
            method=TIMING_METHODS[self.mode],
            shape=shape.name,
            reference=reference,
            submission=submission,
            speedup=reference.median_s / submission.median_s if submission.median_s > 0 else 0.0,
            speedup_ci=stats.ratio_interval(ref_ci, sub_ci),
            significant=scored and stats.intervals_separate(ref_ci, sub_ci),
            scored=scored,
            calls_per_batch=self.calls_per_batch,
            witness={
                f"{name}_median_s": {
                    "reference": stats.median(getattr(self.ref, field_name)),
                    "submission": stats.median(getattr(self.sub, field_name)),
                }
                for name, field_name in WITNESS_FIGURES
            },
        )
