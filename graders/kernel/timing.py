"""Timing a kernel submission against its reference: warm-up, batch sizing,
interleaved pairs of batches, the paired statistics, and the cross-checks of
the harness's clock against the grader's.

The figure of a batch is decided by the grader alone (see ``batch``):

- ``cpu_time`` (CPU hosts, one thread per process): the CPU time the kernel
  counted for the whole sandbox between the freezes around the batch, over
  the number of calls. Nothing in the sandbox can run outside a batch, and
  everything in it counts during one, so shifting work between calls, into
  other threads, timers or finalizers, or slowing the clock gains nothing; a
  busy host barely moves it, since time spent waiting for a core is not CPU
  time.
- ``wall`` (CPU hosts that give a task several threads): the grader's wall
  clock around each call, summed over the batch.
- ``cuda_events`` (GPU hosts): CUDA events around each call after an L2
  flush, with the grader's wall clock and the profiler's device time as
  witnesses. Written for GPU hosts; not run on this project's CPU-only
  machines.
- ``interpreter`` (Triton under ``TRITON_INTERPRET=1`` on a CPU host): a short
  run that decides nothing; never scored.

Batch length comes from the reference's warm-up only: enough calls for the
reference to spend ``BATCH_CPU_S`` in a batch, within the time budget and the
memory a batch's inputs and outputs take, and never under two calls outside the
interpreter (an output must stay as returned until its batch ends, which only a
batch of two calls or more can check); one untimed pair of that length
settles both heaps before the first timed pair. Pairs of batches alternate which
side goes first; the speedup is the median of the pairs' ratios, with a
sign-test interval (``timing.sign_test_interval``), and it is significant
only with at least ``MIN_PAIRS`` pairs and an interval that lies wholly beyond
a margin of ``MIN_EFFECT`` (above 1.05, or below 1/1.05): identical code must
not come out significant even when the two processes differ by a few per cent.
On CPU hosts a speedup must also clear the share of a call that the harness's
own bookkeeping takes (measured on the reference's side), which a submission
could trim by replacing the harness's loop; where that share is over a
quarter, the timing is not scored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graders import stats

from .batch import Batch
from .report import TimingResult, TimingStats
from .rules import Pair
from .spec import ShapeSet

if TYPE_CHECKING:
    from .grading import _Grading

BATCH_CPU_S = 0.02  # the reference's work in one batch
MIN_CALLS_PER_BATCH = 2
MAX_CALLS_PER_BATCH = 200
# Inputs and outputs of one batch are held by the grader at once.
BATCH_MEMORY_BYTES = 128 * 1024 * 1024
# The fewest pairs that can give a 95 % sign-test interval, and the margin the
# whole interval must clear for a speedup (or slowdown) to be significant.
MIN_PAIRS = 6
MIN_EFFECT = 0.05
# On CPU hosts (cpu_time and wall) the figure counts the harness's own bookkeeping
# around each call (reading the command, the checks, describing the output): a submission
# can replace the harness's loop in its process with a leaner one and save up to that much.
# The reference's harness measures it (its own thread's CPU time outside the calls, an
# upper bound on the work itself: a leaner loop still reads commands and describes
# outputs). But a leaner loop also makes the calls faster: the harness's bookkeeping runs
# on caches the grader's traffic has just emptied, and leaves them colder for the call.
# Measured here, a loop that matched commands as bytes and answered from prebuilt
# replies saved 1.5-1.7 times the bookkeeping the reference's harness reported (the
# `lean_loop_prefaulted_pool` exploit: 0.45 ms of bookkeeping in a 3.2 ms call, 0.5-0.7 ms
# saved). A speedup is significant only if it clears MIN_EFFECT plus LEAN_LOOP_FACTOR
# times that share of the reference's figure, and a timing whose bookkeeping is more than
# MAX_BOOKKEEPING_SHARE of it is not scored.
LEAN_LOOP_FACTOR = 2.0
MAX_BOOKKEEPING_SHARE = 0.25
# Cross-check of the harness's clock: no call may take longer by it than by the
# grader's clock around the request (plus CLOCK_SLACK_S), and over the run it must
# account for at least (1 - CLOCK_TOLERANCE) of the CPU time a call used beyond the
# harness's own bookkeeping (as the reference's batches show it), less 0.1 ms. A
# clock slowed tenfold shows as a tenth; a busy host only makes it read more.
CLOCK_SLACK_S = 0.001
CLOCK_TOLERANCE = 0.5
CLOCK_ABS_TOLERANCE_S = 0.0001

TIMING_METHODS = {
    "cpu_time": (
        "CPU time of the whole sandbox per batch of calls on fresh inputs, read by the grader "
        "from the sandbox's cgroup while it is frozen, over the calls; batches of reference "
        "and submission alternate in pairs; the speedup is the median of the pairs' ratios"
    ),
    "wall": (
        "the grader's wall clock around each call, summed per batch of calls on fresh inputs; "
        "batches of reference and submission alternate in pairs; the speedup is the median "
        "of the pairs' ratios"
    ),
    "cuda_events": (
        "CUDA events around each call after a full synchronise and an L2 flush (2x L2); the "
        "grader's wall clock around each call and the profiler's device time as witnesses"
    ),
    "interpreter": ("Triton interpreter on a CPU host: a short run, not a performance measurement"),
}


@dataclass
class Samples:
    """One side's timings, one entry per batch."""

    figure: list[float] = field(default_factory=list)  # per call, by the timing mode
    cpu: list[float] = field(default_factory=list)  # CPU time per call
    wall: list[float] = field(default_factory=list)  # the grader's clock per call
    inside: list[float] = field(default_factory=list)  # the harness's clock per call
    keep: list[float | None] = field(default_factory=list)  # the harness's bookkeeping per call
    calls: int = 0

    def add(self, batch: Batch, mode: str) -> None:
        self.figure.append(batch.per_call(_figure_of(mode)))
        self.cpu.append(batch.cpu_s / batch.count)
        self.wall.append(sum(call.wall_s for call in batch.calls) / batch.count)
        self.inside.append(batch.inside_s / batch.count)
        keep = batch.keep_s
        self.keep.append(None if keep is None else keep / batch.count)
        self.calls += batch.count

    def stats(self, seed: int) -> TimingStats:
        low, high = stats.bootstrap_median_ci(self.figure, seed=seed)
        return TimingStats(
            median_s=stats.median(self.figure),
            spread=stats.spread(self.figure),
            count=len(self.figure),
            calls=self.calls,
            ci_low_s=low,
            ci_high_s=high,
            samples_s=list(self.figure),
        )


def _figure_of(mode: str) -> str:
    return {"interpreter": "wall"}.get(mode, mode)


class Timing:
    """Warm-up, then interleaved pairs of batches until the ratio is tight or the
    budget is spent."""

    def __init__(self, grading: _Grading) -> None:
        self.g = grading
        self.settings = grading.spec.timing
        self.mode = grading.mode
        self.events = self.mode == "cuda_events"
        self.ref = Samples()
        self.sub = Samples()
        self.calls_per_batch = 1
        self.profiled_s: float | None = None
        self.harness_overhead_s = 0.0  # the reference's CPU per call outside its calls
        self.sub_batches: list[tuple[float, float, int]] = []  # (CPU, own clock, calls)

    def run(self) -> TimingResult:
        shape = self.g.timing_shape()
        if shape is not self.g.current_shape:
            self.g.setup(shape)
        self.calls_per_batch = self._calls_per_batch(self._warm_up())
        self._settle()
        self._pairs()
        return self._result(shape)

    def _warm_up(self) -> Batch:
        warmup = (
            min(self.settings.warmup, 1) if self.mode == "interpreter" else self.settings.warmup
        )
        pair = self.g.run_pair(max(warmup, 1), events=self.events)
        self.g.require_correct(pair, "warm-up")
        assert pair.ref is not None
        self._note_overhead(pair.ref)
        return pair.ref

    def _settle(self) -> None:
        """One untimed pair of full-length batches: each side's heap grows to what a
        timed batch holds (its outputs are kept until the batch ends), so the first
        timed pair does not charge the page faults of that growth to one side only
        (a submission that grew its heap at import would start 2x ahead)."""
        if self.mode == "interpreter":
            return
        pair = self.g.run_pair(self.calls_per_batch, events=self.events)
        self.g.require_correct(pair, "settling batch")

    def _calls_per_batch(self, warm: Batch) -> int:
        """From the reference's warm-up alone: a submission cannot steer it."""
        if self.mode == "interpreter":
            return 1
        figure = max(warm.per_call(_figure_of(self.mode)), 1e-7)
        wall = max(sum(call.wall_s for call in warm.calls) / warm.count, 1e-7)
        wanted = math.ceil(BATCH_CPU_S / figure)
        pairs = max(self.settings.min_batches, MIN_PAIRS)
        by_budget = self.settings.budget_s / (2 * pairs * wall)
        per_call_bytes = self.g.input_bytes.get(
            self.g.current_shape.name if self.g.current_shape else "", 0
        )
        per_call_bytes += 2 * self.g.output_bytes_per_call
        by_memory = BATCH_MEMORY_BYTES / max(per_call_bytes, 1)
        # Two calls at least: the grader reads every earlier output of a batch again at
        # its end (``batch._check_outputs_kept``), which a batch of one call never does,
        # so a buffer handed out again and again would pass on a host slow enough to give
        # long calls batches of one, and be caught on a quicker one.
        return int(max(MIN_CALLS_PER_BATCH, min(wanted, by_budget, by_memory, MAX_CALLS_PER_BATCH)))

    def _pairs(self) -> None:
        if self.mode == "interpreter":
            limit = minimum = 2
        else:
            minimum = max(self.settings.min_batches, MIN_PAIRS)
            limit = max(self.settings.max_batches, minimum)
        budget = self.settings.budget_s
        began = time.monotonic()
        for index in range(limit):
            pair = self.g.run_pair(
                self.calls_per_batch, sub_first=index % 2 == 1, events=self.events
            )
            self.g.require_correct(pair, f"timed batch {index + 1}")
            assert pair.ref is not None and pair.sub is not None
            self._cross_check(pair.ref, pair.sub)
            if self.events and index == 0:
                self.profiled_s = self.g.profile_submission(self.calls_per_batch)
            self.ref.add(pair.ref, self.mode)
            self.sub.add(pair.sub, self.mode)
            done = index + 1
            spent = time.monotonic() - began
            if self.g.deadline - time.monotonic() < 3 * spent / done + 5.0:
                break
            if done >= minimum and (spent >= budget or self._converged()):
                break

    def _converged(self) -> bool:
        interval = stats.sign_test_interval(
            stats.paired_log_ratios(self.ref.figure, self.sub.figure)
        )
        if interval is None:
            return False
        low, high, _ = interval
        return (high - low) / 2 <= self.settings.target_rel_error

    # -- cross-checks -------------------------------------------------------------------

    def _cross_check(self, ref: Batch, sub: Batch) -> None:
        """The submission's batch against the grader's witnesses (the reference is
        trusted; its batches say what the harness's own bookkeeping costs)."""
        if self.mode == "interpreter":
            return
        self._clock_runs_fast(sub)
        if self.mode == "cpu_time":
            self._clock_runs_slow(ref, sub)
        if self.events:
            self._events_within_wall(sub)

    def _clock_runs_fast(self, sub: Batch) -> None:
        for index, call in enumerate(sub.calls):
            if call.inside_s > call.wall_s * 1.02 + CLOCK_SLACK_S:
                raise self.g.violation(
                    f"the submission's in-process clock counted {call.inside_s:.3g} s for call "
                    f"{index + 1}, which took {call.wall_s:.3g} s by the grader's clock: "
                    "a clock was tampered with"
                )

    def _clock_runs_slow(self, ref: Batch, sub: Batch) -> None:
        """Noted per pair; decided over the whole run (``_clock_over_the_run``), where
        one batch's spike (a cold cache, a page fault storm) does not decide."""
        self._note_overhead(ref)
        self.sub_batches.append((sub.cpu_s, sub.inside_s, sub.count))

    def _clock_over_the_run(self) -> None:
        """The harness's clock must account for most of the CPU time the calls used:
        per call, the median batch's CPU time less what the harness's own bookkeeping
        costs (the most any reference batch showed: a busy host inflates the
        reference's clock, which only shrinks that estimate and widens the allowance)."""
        if self.mode != "cpu_time" or not self.sub_batches:
            return
        cpu = stats.median([c / n for c, _, n in self.sub_batches])
        inside = stats.median([i / n for _, i, n in self.sub_batches])
        calls = cpu - self.harness_overhead_s
        if calls <= 0:
            return
        if inside < (1.0 - CLOCK_TOLERANCE) * calls - CLOCK_ABS_TOLERANCE_S:
            raise self.g.violation(
                f"the submission's in-process clock reports {inside:.3g} s per call where "
                f"the calls used {cpu:.3g} s of CPU time each: a clock was tampered with"
            )

    def _note_overhead(self, ref: Batch) -> None:
        overhead = max(0.0, (ref.cpu_s - ref.inside_s) / ref.count)
        self.harness_overhead_s = max(self.harness_overhead_s, overhead)

    def _events_within_wall(self, sub: Batch) -> None:
        for index, call in enumerate(sub.calls):
            if call.event_s is not None and call.event_s > call.wall_s * 1.02 + CLOCK_SLACK_S:
                raise self.g.violation(
                    f"CUDA events report {call.event_s:.3g} s for call {index + 1}, which took "
                    f"{call.wall_s:.3g} s by the grader's clock: event timing was tampered with"
                )

    def _profiler_check(self) -> None:
        """GPU hosts only: CUDA event times against the profiler's device time."""
        if not self.events or self.profiled_s is None:
            return
        self.g.report.integrity.checks.append(
            "CUDA event times agree with the profiler's device time"
        )
        events_s = stats.median(self.sub.figure)
        if events_s < 0.5 * self.profiled_s:
            raise self.g.violation(
                f"CUDA events report {events_s:.3g} s per call but the profiler measured "
                f"{self.profiled_s:.3g} s of device time: event timing was tampered with"
            )

    # -- the result ---------------------------------------------------------------------

    def _unscored_reason(self) -> str:
        """Why this timing cannot be scored, or "" when it can."""
        if self.mode == "interpreter":
            return "Triton's interpreter on a CPU host is not a performance measurement"
        if self.mode in ("cpu_time", "wall"):
            share = self._bookkeeping_share()
            if share is None or share > MAX_BOOKKEEPING_SHARE:
                return (
                    "the harness's own work around each call is more than "
                    f"{MAX_BOOKKEEPING_SHARE:.0%} of the reference's call: the calls are too "
                    "short to time, since a submission could trim that work by replacing "
                    "the harness's loop"
                )
        return ""

    def _faster_margin(self) -> float:
        """How much faster (as a log ratio) the interval must lie to be significant:
        MIN_EFFECT, plus on CPU hosts what a leaner loop than the harness's could save."""
        share = self._bookkeeping_share() if self.mode in ("cpu_time", "wall") else 0.0
        return math.log1p(MIN_EFFECT + LEAN_LOOP_FACTOR * (share or 0.0))

    def _bookkeeping_share(self) -> float | None:
        """The reference's harness's own work per call over its figure per call (its
        batches' medians), or None if it did not report it."""
        keep = self.ref.keep
        if not keep or any(item is None for item in keep):
            return None
        figure = stats.median(self.ref.figure)
        if figure <= 0:
            return None
        return stats.median([item for item in keep if item is not None]) / figure

    def _result(self, shape: ShapeSet) -> TimingResult:
        self._profiler_check()
        self._clock_over_the_run()
        checks = self.g.report.integrity.checks
        if self.mode != "interpreter":
            checks.append("the in-process clock agrees with the grader's witnesses")
        if self.mode == "cpu_time" and self.g.threads == 1:
            checks.append("no CPU time outside the harness's main thread during a batch")
        reference = self.ref.stats(seed=1)
        submission = self.sub.stats(seed=2)
        ratios = stats.paired_log_ratios(self.ref.figure, self.sub.figure)
        middle = stats.median(ratios) if ratios else 0.0
        interval = stats.sign_test_interval(ratios)
        unscored = self._unscored_reason()
        scored = not unscored
        significant = (
            scored
            and interval is not None
            and (interval[0] > self._faster_margin() or interval[1] < -math.log1p(MIN_EFFECT))
        )
        if interval is None:
            low, high = (min(ratios), max(ratios)) if ratios else (0.0, 0.0)
        else:
            low, high = interval[0], interval[1]
        return TimingResult(
            timing_mode=self.mode,
            method=TIMING_METHODS[self.mode],
            shape=shape.name,
            reference=reference,
            submission=submission,
            speedup=math.exp(middle),
            speedup_ci=(math.exp(low), math.exp(high)),
            significant=significant,
            scored=scored,
            calls_per_batch=self.calls_per_batch,
            unscored_reason=unscored,
            witness={
                "pairs": len(ratios),
                "interval_coverage": interval[2] if interval else None,
                "min_effect": MIN_EFFECT,
                **{
                    f"{name}_per_call_median_s": {
                        "reference": stats.median(getattr(self.ref, name)),
                        "submission": stats.median(getattr(self.sub, name)),
                    }
                    for name in ("cpu", "wall", "inside")
                },
                "harness_overhead_per_call_s": self.harness_overhead_s,
                "bookkeeping_share": self._bookkeeping_share(),
                "faster_margin": math.expm1(self._faster_margin()),
            },
        )


__all__ = ["TIMING_METHODS", "Pair", "Timing"]
