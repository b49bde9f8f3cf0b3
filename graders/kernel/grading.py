"""Grading a kernel submission: the trusted grader.

``grade(spec, submission_files, backend=…, limits=…)`` starts three sandboxed
harness processes and drives them over their channel pipes: the *inputs*
process (the reference module, which generates every input from seeds chosen
here with ``secrets`` and runs a task's own ``check_implementation``), the
*reference* process (the reference module again, timed) and the
*submission* process. The two timed processes do exactly the same kind of
work, so neither's timing is disturbed by work the other does not do. The
submission process never sees the seeds, the reference source or its
outputs. Every sandbox is frozen whenever it is not its turn.

Each call goes the same way on both sides (``batch``): this process
writes the call's inputs into the side's arena, the harness runs the call and
says where its output is, and this process reads the output out of the
harness's memory and the guard bands and inputs back out of the arena, before
the next call's inputs exist. Every output, of correctness trials and timed
calls alike, is compared here with the reference's for the same inputs. The
verdict is decided only here, from what this process measured and read;
whatever the submission's process reports can only make its verdict worse.

Timing (``timing``): warm-up, then pairs of batches, the figure of a
batch being the CPU time the kernel counted for the whole sandbox while it
ran (``cpu_time``; ``wall`` where a task gives a process several threads,
``cuda_events`` on GPU hosts, ``interpreter`` for Triton on a CPU host, which
decides correctness only).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from sandboxes import hardware as host_hardware
from sandboxes import procstat
from sandboxes.base import (
    GiB,
    Limits,
    MiB,
    RunRequest,
    RunResult,
    Sandbox,
    SandboxError,
    python_env,
)
from sandboxes.cgroups import FreezeTimeout

from .batch import MMAP_THRESHOLD_BYTES, OTHER_THREADS_SLACK_S, Batch, BatchStop, Call, run_batch
from .compare import Comparison, compare_outputs
from .harness.protocol import (
    HARNESS_VERSION,
    MAX_HEADER_BYTES,
    ProtocolError,
    is_number,
    pack_tree,
)
from .inputs import Placed, place
from .outputs import overlaps
from .profile import attach as attach_profile
from .profile import keeps_verdict
from .report import GradeReport, TimingResult, TrialResult, Verdict
from .rules import (
    NEEDS_CUDA_ERRORS,
    Pair,
    Stop,
    check_submission_files,
    choose_entry,
    classify_error,
    limit_verdict,
    list_of,
    uses_cuda_source,
    uses_triton,
)
from .side import Side, SideFailure, clean_text
from .spec import MIN_TRIALS, GradingSpec, ShapeSet
from .timing import BATCH_MEMORY_BYTES, Timing

logger = logging.getLogger(__name__)

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
HARNESS_MOUNT = "/opt/benchwright"
WORKDIR = "/workdir"  # not /work: the Python environment may live under /work on the host
BOOTSTRAP = (
    f"import sys; sys.path.insert(0, {HARNESS_MOUNT!r}); from harness.main import main; main()"
)
INNER_TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs
LOG_TAIL_BYTES = 8192
CALL_CHECKS = (
    "every output read by the grader before the next call's inputs existed",
    "outputs are plain tensors of the reference's dtype, shape and device",
    "inputs unchanged and guard bands intact after every call (read by the grader)",
    "no hooks, modes, timers or stray threads or processes after every batch",
)
# Verdicts a limit hit does not replace: the platform's own, and an integrity violation
# (a process that will not end when told, after being caught, is not what it did wrong).
LIMITS_DO_NOT_OVERRIDE = (
    Verdict.INTERNAL_ERROR,
    Verdict.NEEDS_HARDWARE,
    Verdict.INTEGRITY_VIOLATION,
)
# Failures that a run stuck at its memory limit shows as (the kernel reclaiming pages
# slows it to a crawl before anything is killed).
MEMORY_CAUSED = (Verdict.TIME_LIMIT_EXCEEDED, Verdict.RUNTIME_ERROR)
REFERENCE_FAILED = "internal error: the reference process failed"
# How much longer than the submission's the trusted processes' wall time limit is.
TRUSTED_WALL_SLACK_S = 120.0
# The arena holds one call's inputs; it is sparse, so only what is written takes memory.
MIN_ARENA_BYTES = 256 * MiB
# A solution that calls torch.compile: its first call on each shape set may take this
# long (later calls get the task's call_timeout_s).
COMPILE_MARKER = re.compile(r"\btorch\.compile\b")
COMPILE_CALL_TIMEOUT_S = 180.0
# The reference's init arguments and weights travel to the grader as one reply.
MAX_STATE_BYTES = 4 * GiB

# glibc: blocks of 32 MiB and more always get a mapping of their own (page faults on
# every call, in both processes alike), and smaller freed memory is kept for reuse, not
# trimmed. No top pad: with 256 MiB of padding, whether a 63 MB output came from free
# space at the top of one process's heap (no faults) or from a fresh mapping in the
# other (15,000 faults a call) depended on each process's history, and the identity
# solutions of convolution problems read 0.67-1.54x, "significant". (Taking every block
# from the heap instead, MALLOC_MMAP_MAX_=0, grew a process that maps a file on every
# call past its memory limit.) Thread counts are pinned too.
MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD_BYTES),
    "MALLOC_TRIM_THRESHOLD_": "4294967296",
}


def grade(
    spec: GradingSpec,
    submission_files: Mapping[str, str],
    *,
    backend: Sandbox,
    limits: Limits,
    hardware: str | None = None,
    trials: int | None = None,
    threads: int = 1,
) -> GradeReport:
    """Grade one kernel submission; always returns a report, never raises.

    ``hardware`` names this worker's hardware class (``cpu``, ``h100``, …);
    ``None`` detects it. ``trials`` overrides the spec's (at least 5).
    ``threads`` pins the thread count of both processes.
    """
    started = time.monotonic()
    grading = _Grading(spec, dict(submission_files), backend, limits, hardware, trials, threads)
    # Comparisons are many small tensor ops: an OpenMP pool only adds wake-up latency,
    # and on a busy host a lot of it.
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    affinity = os.sched_getaffinity(0)
    if grading.threads == 1:
        # This thread and both timed processes share one CPU: a call and its handover
        # take turns, never overlap, and neither side runs on a faster or busier core
        # than the other. Concurrent gradings on other threads pick their own CPU.
        os.sched_setaffinity(0, {grading.cpu})
    try:
        grading.run()
    except Exception as exc:  # the grader's own failure: never the submission's fault
        logger.exception("kernel grading failed")
        grading.conclude(
            Verdict.INTERNAL_ERROR, "internal error in the grader", f"{type(exc).__name__}: {exc}"
        )
    finally:
        try:
            grading.close()
        except Exception as exc:  # cleaning up failed: the report still comes back
            logger.exception("closing a kernel grading failed")
            grading.report.verdict = Verdict.INTERNAL_ERROR
            grading.report.reason = "internal error in the grader"
            grading.report.operator_notes += f"\nclosing: {type(exc).__name__}: {exc}"
        torch.set_num_threads(torch_threads)
        os.sched_setaffinity(0, affinity)
        _release_cpu(grading.cpu)
    report = grading.report
    report.duration_s = time.monotonic() - started
    report.phases = {name: round(value, 6) for name, value in grading.phases.items()}
    _hide_host_paths(report)
    return report


def _host_paths() -> list[tuple[str, str]]:
    """Folders of this host that show up in tracebacks and warnings (the sandbox
    binds the Python installation at its own path), longest first, and what a
    client sees instead."""
    paths = {
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        str(Path(__file__).resolve().parent.parent): "<grader>",
    }
    found = [(path, name) for path, name in paths.items() if len(path) > 1]
    return sorted(found, key=lambda item: len(item[0]), reverse=True)


def _hide_host_paths(report: GradeReport) -> None:
    """Replace this host's folders in everything a client may read of the report: the
    reason, the logs, trial messages and integrity findings."""

    def hide(text: str) -> str:
        for path, name in _host_paths():
            text = text.replace(path, name)
        return text

    report.reason = hide(report.reason)
    report.logs = {stream: hide(text) for stream, text in report.logs.items()}
    report.integrity.violations = [hide(text) for text in report.integrity.violations]
    for trial in report.correctness:
        trial.message = hide(trial.message)


# -- the grading ---------------------------------------------------------------------


class _Grading:
    def __init__(
        self,
        spec: GradingSpec,
        files: dict[str, str],
        backend: Sandbox,
        limits: Limits,
        hardware: str | None,
        trials: int | None,
        threads: int,
    ) -> None:
        self.spec = spec
        self.files = files
        self.backend = backend
        self.base_limits = limits
        self.limits = limits
        self.hardware_name = hardware
        self.trials = spec.trials if trials is None else trials
        self.threads = max(1, int(threads))
        self.cpu = _grading_cpu()
        self.report = GradeReport(
            verdict=Verdict.INTERNAL_ERROR, reason="not graded", harness_version=HARNESS_VERSION
        )
        self.phases: dict[str, float] = {}
        self.gen: Side | None = None
        self.ref: Side | None = None
        self.sub: Side | None = None
        self.deadline = time.monotonic() + self.limits.wall_time_s
        self.device = "cpu"
        self.mode = "cpu_time"
        self.shapes: list[ShapeSet] = []
        self.current_shape: ShapeSet | None = None
        self.called_shapes: set[str] = set()  # shape sets the submission was called on
        self.compiles = any(COMPILE_MARKER.search(text) for text in files.values())
        self.has_check = False
        self.input_bytes: dict[str, int] = {}
        self.output_bytes_per_call = 0
        self.reference_ran = False
        self.baseline = (0, 0)
        self.concluded = False
        self.profile_started = False  # the trace summary for reviewers began (``profile``)

    # -- outcome ------------------------------------------------------------------

    def conclude(self, verdict: Verdict, reason: str, notes: str = "") -> None:
        if self.concluded:
            return
        self.concluded = True
        self.report.verdict = verdict
        self.report.reason = reason
        if notes:
            self.report.operator_notes = notes

    def violation(self, message: str) -> Stop:
        self.report.integrity.violations.append(message)
        return Stop(Verdict.INTEGRITY_VIOLATION, message)

    def run(self) -> None:
        try:
            if self.trials < MIN_TRIALS:
                raise ValueError(f"trials must be at least {MIN_TRIALS}")
            self.limits = self.spec.effective_limits(self.base_limits)
            self.deadline = time.monotonic() + self.limits.wall_time_s
            self._static_checks()
            self._start()
            self._load()
            self._correctness()
            timing = Timing(self).run()
            self._full_audit("after the timed calls")
            self.report.timing = timing
            self.conclude(Verdict.ACCEPTED, self._accepted_reason(timing))
            # Only now, with every timed batch and the audit done: advisory, never raises.
            attach_profile(self)
        except Stop as stop:
            self.conclude(stop.verdict, stop.reason, stop.notes)
        except SideFailure as failure:
            self._side_failed(failure)

    def _accepted_reason(self, timing: TimingResult | None) -> str:
        reason = (
            f"correct on {len(self.shapes)} shape set(s) x {self.trials} trials "
            f"and {self.report.checked_calls} checked calls"
        )
        if timing and timing.scored:
            note = "significant" if timing.significant else "not significant"
            reason += f"; speedup {timing.speedup:.2f}x ({note})"
        elif timing:
            # The figure is in the timing section; a reason quoting it reads as a score.
            reason += f"; timed ({timing.timing_mode}), not scored: {timing.unscored_reason}"
        return reason

    # -- failures of a side -----------------------------------------------------------

    def _side_failed(self, failure: SideFailure) -> None:
        if failure.role != "submission":
            error = failure.error
            text = (
                f"{error.get('type', '')}: {error.get('message', '')}" if error else failure.message
            )
            if any(marker in text for marker in NEEDS_CUDA_ERRORS):
                self.conclude(Verdict.NEEDS_HARDWARE, "the reference needs a CUDA device", text)
                return
            notes = f"{failure.kind}: {failure.message}\n{error.get('traceback', '')}"
            if failure.kind == "error":
                # The reference's own code raised on its own inputs: the task is broken.
                # The error may quote hidden files, so it goes to the notes only.
                self.conclude(
                    Verdict.TASK_ERROR,
                    "the task's reference failed: a problem with the task, not with the "
                    "submission (its authors and operators see the error)",
                    f"the reference raised {text}\n{notes}",
                )
                return
            if failure.kind == "too_large":
                # Its weights or outputs at this shape set are more than a grading holds.
                self.conclude(
                    Verdict.TASK_ERROR,
                    "the task's reference produced more data than a grading can hold at "
                    "this shape set: a problem with the task, not with the submission",
                    notes,
                )
                return
            self.conclude(Verdict.INTERNAL_ERROR, REFERENCE_FAILED, notes)
            return
        if failure.kind == "error":
            # A call that fails for want of CUDA needs a GPU only where the task targets
            # one and this host has none; elsewhere the message is just the solution's.
            gpu_missing = self.spec.hardware != "cpu" and self.device == "cpu"
            self.conclude(*classify_error(failure.error, gpu_missing=gpu_missing))
        elif failure.kind == "timeout":
            self.conclude(
                Verdict.TIME_LIMIT_EXCEEDED,
                f"the submission did not answer in time ({failure.message})",
            )
        elif failure.kind in ("protocol", "too_large"):
            self.conclude(
                Verdict.INTEGRITY_VIOLATION,
                f"the submission process sent a malformed reply ({failure.message})",
            )
        else:
            self.conclude(
                Verdict.RUNTIME_ERROR,
                f"the submission process ended unexpectedly ({failure.message})",
            )

    def close(self) -> None:
        """Stop both processes, collect logs, and let a limit hit decide the verdict."""
        for side, phase in ((self.ref, "reference_phase"), (self.sub, "submission_phase")):
            if side is not None and "imports" in self.phases:
                self.phases[phase] = side.busy_s
        for side in (self.gen, self.ref):
            if side is None:
                continue
            trusted = self._finish(side)
            if (
                trusted is not None
                and trusted.memory_limit_hit
                and self.report.verdict == Verdict.INTERNAL_ERROR
                and self.report.reason == REFERENCE_FAILED
            ):
                # The task's own code needs more memory than a grading has at this shape
                # set (a 4 GB output): the same every time, so no retry can help.
                self.report.verdict = Verdict.TASK_ERROR
                self.report.reason = (
                    f"the task's {side.role} process reached its memory limit at this shape "
                    "set: a problem with the task, not with the submission"
                )
        if self.sub is None:
            return
        result = self._finish(self.sub)
        if result is None:
            return
        self.report.logs = {"stdout": _tail(result.stdout), "stderr": _tail(result.stderr)}
        limit = limit_verdict(result)
        if limit and keeps_verdict(self, result.limit_exceeded):
            # Hit while profiling for reviewers, after the verdict: the summary is advisory.
            self.report.operator_notes += (
                f"\nthe submission's process hit its {result.limit_exceeded} limit after the "
                "verdict, while profiled for the trace summary: verdict kept"
            )
            limit = None
        # The wall limit ran out (the sandbox's, or the grader's own deadline), rather
        # than a call's timeout or the CPU time limit, which are the submission's alone.
        wall_ran_out = (
            result.limit_exceeded == "wall_time" or time.monotonic() >= self.deadline - 1.0
        )
        if limit and self.report.verdict not in LIMITS_DO_NOT_OVERRIDE:
            self.report.verdict, self.report.reason = limit
            if self.report.verdict == Verdict.TIME_LIMIT_EXCEEDED and wall_ran_out:
                self._blame_wall_time()
        elif result.memory_limit_hit and self.report.verdict in MEMORY_CAUSED:
            # The run reached its memory limit and then failed or stalled: that is why.
            self.report.verdict = Verdict.MEMORY_LIMIT_EXCEEDED
            self.report.reason = (
                f"the submission process reached its memory limit ({self.report.reason})"
            )
        elif self.report.verdict == Verdict.TIME_LIMIT_EXCEEDED and wall_ran_out:
            self._blame_wall_time()
        elif (
            self.report.verdict == Verdict.RUNTIME_ERROR
            and "ended unexpectedly" in self.report.reason
        ):
            self.report.reason += f"; {_exit_status(result)}"

    def _blame_wall_time(self) -> None:
        """Keep ``time_limit_exceeded`` unless the task's own work filled the wall time.

        The submission's process lives from the first trial to the last timed batch,
        so its wall limit also pays for the inputs and reference processes' work. Only
        the grader's waits on those trusted processes count as the task's (the
        submission is frozen while they run, so it cannot stretch them); every other
        second, including any the submission could make the grader lose (a blocked
        pipe, a slow read of its memory), counts as the submission's. When the task's
        processes took at least half of the limit and at least as long as all the rest,
        blaming the submission would fail honest code on a busy host or a task too
        large for its limit: that is an ``internal_error``, graded again, which an
        operator sees."""
        wall = self.limits.wall_time_s
        elapsed = time.monotonic() - (self.deadline - wall)
        trusted = sum(side.waited_s for side in (self.gen, self.ref) if side is not None)
        rest = elapsed - trusted
        if trusted < 0.5 * wall or trusted < rest:
            return
        self.report.verdict = Verdict.INTERNAL_ERROR
        self.report.reason = (
            f"the grading ran out of wall time ({wall:.0f} s), {trusted:.0f} s of it in the "
            f"task's own processes and {rest:.0f} s in the submission and the grader (a busy "
            "host, or a task too large for its time limit)"
        )
        self.report.operator_notes += (
            f"\nwall time: inputs and reference {trusted:.1f} s, everything else {rest:.1f} s, "
            f"limit {wall:.0f} s"
        )

    def _finish(self, side: Side) -> RunResult | None:
        try:
            return side.finish(timeout_s=10.0)
        except (SandboxError, OSError) as exc:
            logger.warning("finishing the %s sandbox failed: %s", side.role, exc)
            return None

    # -- static checks and start-up ---------------------------------------------------

    def _static_checks(self) -> None:
        check_submission_files(self.files, task_files=self.spec.shared_files)
        self.entry = choose_entry(self.files)
        detected = host_hardware.detect()
        gpu_host = (
            detected["gpu"] is not None
            if self.hardware_name is None
            else self.hardware_name != "cpu"
        )
        if gpu_host and detected["gpu"] is None:
            raise RuntimeError(
                f"hardware {self.hardware_name!r} was named but this host has no CUDA device"
            )
        self.device = "cuda" if gpu_host and self.spec.hardware != "cpu" else "cpu"
        host_kind = "gpu" if self.device == "cuda" else "cpu"
        self.report.hardware = {
            **detected,
            "name": self.hardware_name or detected["name"],
            "device": self.device,
            "sandbox": self.backend.name,
            "threads": self.threads,
        }
        if self.device == "cpu" and (self.spec.language == "cuda" or uses_cuda_source(self.files)):
            if self.spec.hardware == "cpu":
                # No host will ever give this task a GPU: CUDA source cannot be graded.
                raise Stop(
                    Verdict.RUNTIME_ERROR,
                    "the solution uses CUDA source, but this task runs on a CPU",
                )
            raise Stop(Verdict.NEEDS_HARDWARE, "CUDA source needs a GPU host; this one has none")
        self.shapes = self.spec.shapes_for(host_kind)
        if not self.shapes:
            raise Stop(
                Verdict.NEEDS_HARDWARE, f"no shape set of this task is marked for {host_kind} hosts"
            )
        if self.device == "cuda":
            self.mode = "cuda_events"
        elif uses_triton(self.files):
            self.mode = "interpreter"
        elif self.threads == 1:
            self.mode = "cpu_time"
        else:
            self.mode = "wall"

    def _env(self) -> dict[str, str]:
        threads = str(self.threads)
        env = {
            **python_env(WORKDIR, threads=self.threads, tmpdir=INNER_TMP),
            "BENCHWRIGHT_THREADS": threads,
            "MAX_JOBS": threads,
            "TORCH_EXTENSIONS_DIR": f"{WORKDIR}/.torch_extensions",
            "TRITON_CACHE_DIR": f"{WORKDIR}/.triton",
            "TRITON_HOME": WORKDIR,
            "TORCHINDUCTOR_COMPILE_THREADS": "1",  # no pool of compile workers left running
            # torch.compile's precompiled header is over 150 MB: past a sandbox's file size
            # limit, and it saves nothing for a single compile.
            "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0",
            **MALLOC_ENV,
        }
        if self.mode == "interpreter":
            env["TRITON_INTERPRET"] = "1"
            # torch.compile cannot trace kernels the interpreter runs; on this host the
            # grading decides correctness only, so a compiled function runs as written.
            env["TORCH_COMPILE_DISABLE"] = "1"
        return env

    def _request(self, files: Mapping[str, str], *, trusted: bool = False) -> RunRequest:
        limits = self.limits
        if trusted:
            # The trusted processes outlive the submission's deadline: a submission that
            # spends its wall time must end its own grading, never theirs.
            limits = dataclasses.replace(
                limits, wall_time_s=limits.wall_time_s + TRUSTED_WALL_SLACK_S
            )
        return RunRequest(
            arena_bytes=max(self.limits.memory_bytes, MIN_ARENA_BYTES),
            argv=[sys.executable, "-I", "-B", "-c", BOOTSTRAP],
            limits=limits,
            files={name: text.encode("utf-8", "surrogatepass") for name, text in files.items()},
            env=self._env(),
            ro_binds=[(str(HARNESS_DIR), f"{HARNESS_MOUNT}/harness")],
            workdir=WORKDIR,
            gpus=(0,) if self.device == "cuda" else (),
        )

    def remaining(self, wanted: float, *, trusted: bool = False) -> float:
        """A request's timeout: at most ``wanted``, and no later than the submission's
        deadline (or, for the trusted processes, their own, later one)."""
        deadline = self.deadline + (TRUSTED_WALL_SLACK_S if trusted else 0.0)
        return max(1.0, min(wanted, deadline - time.monotonic()))

    def _start(self) -> None:
        began = time.monotonic()
        trusted = self._request(self.spec.files, trusted=True)
        self.gen = Side.start("inputs", self.backend, trusted)
        self.ref = Side.start("reference", self.backend, trusted)
        self.sub = Side.start(
            "submission", self.backend, self._request({**self.spec.shared_files, **self.files})
        )
        try:
            hellos = [
                side.await_reply("hello", self.remaining(120.0))
                for side in (self.gen, self.ref, self.sub)
            ]
        except SideFailure as failure:
            # Nothing of the submission has run yet: this is the sandbox's or the host's fault.
            raise RuntimeError(f"a harness did not start: {failure}") from failure
        for side, hello in zip((self.gen, self.ref, self.sub), hellos, strict=True):
            if hello.header.get("version") != HARNESS_VERSION:
                raise RuntimeError(
                    f"harness version {hello.header.get('version')!r} != {HARNESS_VERSION}"
                )
            side.find_harness(hello.header.get("pid"))
        if self.threads == 1:
            for side in (self.ref, self.sub):
                procstat.pin(side.process.host_pids(), self.cpu)
            self.report.hardware["timed_on_cpu"] = self.cpu
        self.report.hardware["harness_torch"] = clean_text(hellos[0].header.get("torch"), 80)
        self.baseline = self.sub.outside_counts()
        self.phases["sandbox_start"] = time.monotonic() - began

    def _load(self) -> None:
        assert self.gen is not None and self.ref is not None and self.sub is not None
        began = time.monotonic()
        reference = self.spec.reference_path
        for side, entry in ((self.gen, reference), (self.ref, reference), (self.sub, self.entry)):
            side.send_command("load", self._load_header(side.role, entry))
        loaded = self.gen.await_reply("load", self.remaining(300.0, trusted=True))
        self.ref.await_reply("load", self.remaining(300.0, trusted=True))
        submission = self.sub.await_reply("load", self.remaining(self.limits.wall_time_s))
        self.has_check = loaded.header.get("has_check") is True
        self.phases["imports"] = time.monotonic() - began
        self.report.integrity.checks.append("originals intact and no hooks left after import")
        self._check_violations(submission.header.get("violations"), "after importing the solution")
        for side in (self.gen, self.ref, self.sub):
            self._freeze(side)
        self._check_outside("after importing the solution")
        self.ref.busy_s = self.sub.busy_s = 0.0
        # The three processes start and import side by side: the first waits absorb
        # their shared start-up, so only the submission keeps what it took beyond the
        # others (a slow import is its own).
        self.gen.waited_s = self.ref.waited_s = 0.0

    def _load_header(self, role: str, entry: str) -> dict[str, Any]:
        return {
            "format": self.spec.format,
            "device": self.device,
            "seed_inputs": self.spec.seed_inputs,
            "role": "submission" if role == "submission" else "reference",
            "entry": entry,
            # Each process's own torch seed, so torch.initial_seed() reveals nothing.
            "process_seed": secrets.randbits(63),
        }

    # -- freezing -----------------------------------------------------------------------

    def _freeze(self, side: Side) -> None:
        try:
            side.freeze()
        except FreezeTimeout as exc:
            if side.role != "submission":
                raise RuntimeError(f"the reference sandbox could not be frozen: {exc}") from exc
            raise self.violation(
                f"the submission's processes could not be paused ({exc})"
            ) from None

    def _turn(self, side: Side, op: str, header: dict[str, Any], **kwargs: Any) -> Any:
        """One request to a side while the other stays frozen."""
        side.thaw()
        try:
            return side.request(op, header, **kwargs)
        finally:
            if side.process is not None and not side.killed_by_watchdog:
                self._freeze(side)

    # -- integrity ----------------------------------------------------------------------

    def _check_violations(self, reported: Any, when: str) -> None:
        if not isinstance(reported, list):
            raise self.violation(f"the submission process sent a malformed integrity report {when}")
        if reported:
            raise self.violation(
                f"{when}: " + "; ".join(clean_text(item, 300) for item in reported[:5])
            )

    def _full_audit(self, when: str) -> None:
        """Every in-process check (patched functions, harness modules, signal handlers,
        threads): after a batch only the quick ones run, inside the measured time."""
        assert self.sub is not None
        reply = self._turn(self.sub, "audit", {"full": True}, timeout_s=self.remaining(10.0))
        self._check_violations(reply.header.get("violations"), when)
        self._check_outside(when)

    def _check_outside(self, when: str) -> None:
        """Processes and threads in the submission's sandbox (init included), read from
        outside while it is frozen, against the count when its harness said hello."""
        assert self.sub is not None
        processes, threads = self.sub.outside_counts()
        if processes > self.baseline[0]:
            raise self.violation(
                f"{when}: {processes - self.baseline[0]} stray process(es) still running"
            )
        if threads > self.baseline[1]:
            raise self.violation(
                f"{when}: {threads - self.baseline[1]} stray thread(s) still running"
            )

    # -- shapes and batches -------------------------------------------------------------

    def setup(self, shape: ShapeSet) -> None:
        """Build the problem for a shape set in all three processes: the reference's
        model under a secret seed, its init arguments and weights copied into the
        submission's."""
        assert self.gen is not None and self.ref is not None and self.sub is not None
        header = {"params": shape.params, "init_seed": secrets.randbits(63)}
        built = self._turn(
            self.gen,
            "setup",
            header,
            timeout_s=self.remaining(300.0, trusted=True),
            max_bytes=MAX_STATE_BYTES,
        )
        self._turn(
            self.ref,
            "setup",
            header,
            timeout_s=self.remaining(300.0, trusted=True),
            max_bytes=MAX_STATE_BYTES,
        )
        submission = self._turn(
            self.sub,
            "setup",
            {**header, "init": built.header.get("payload")},
            blobs=built.blobs,
            timeout_s=self.remaining(self.spec.timing.call_timeout_s * 4),
        )
        self._check_violations(submission.header.get("violations"), "after building the model")
        self.current_shape = shape
        self.output_bytes_per_call = 0
        self.reference_ran = False

    def run_pair(self, count: int, *, sub_first: bool = False, events: bool = False) -> Pair:
        assert self.gen is not None and self.ref is not None and self.sub is not None
        seeds = [secrets.randbits(63) for _ in range(count)]
        generated = self._turn(
            self.gen,
            "generate",
            {"seeds": seeds},
            timeout_s=self.remaining(60.0 + count * self.spec.timing.call_timeout_s, trusted=True),
            max_bytes=8 * GiB,
        )
        values = list_of(generated.header.get("values"), count, "inputs")
        try:
            placed = [place(value, generated.blobs) for value in values]
        except ProtocolError as exc:
            raise RuntimeError(f"the reference generated unusable inputs: {exc}") from exc
        pair = Pair(seeds, values, generated.blobs, placed)
        shape_name = self.current_shape.name if self.current_shape else ""
        self.input_bytes[shape_name] = sum(blob.nbytes for blob in generated.blobs) // count
        # The first pair of a shape set runs the reference first: its outputs set the
        # budget for the submission's.
        if not self.reference_ran:
            sub_first = False
        self.reference_ran = True
        for role in ("sub", "ref") if sub_first else ("ref", "sub"):
            if role == "ref":
                pair.ref = self._batch(self.ref, placed, events)
                self.output_bytes_per_call = max(
                    self.output_bytes_per_call,
                    max(call.info.nbytes for call in pair.ref.calls),
                )
            else:
                pair.sub = self._batch(self.sub, placed, events)
        return pair

    def _batch(self, side: Side, placed: list[Placed], events: bool) -> Batch:
        is_sub = side.role == "submission"
        call_timeout = self.spec.timing.call_timeout_s
        # A solution that uses torch.compile compiles on its first call of each shape
        # set (C++ on a CPU host: tens of seconds); that call, a correctness trial and
        # never timed, gets longer.
        shape = self.current_shape.name if self.current_shape else ""
        compiles = is_sub and self.compiles and shape not in self.called_shapes
        if is_sub:
            self.called_shapes.add(shape)
        try:
            batch = run_batch(
                side,
                placed,
                call_timeout_s=(
                    self.remaining(call_timeout)
                    if is_sub
                    else self.remaining(10 * call_timeout, trusted=True)
                ),
                first_call_timeout_s=(
                    self.remaining(max(call_timeout, COMPILE_CALL_TIMEOUT_S)) if compiles else None
                ),
                out_cap=(2 * self.output_bytes_per_call + MiB) if is_sub else 8 * GiB,
                # The grader holds a batch's outputs: twice the timing budget, or (one
                # correctness call whose reference output alone is larger) twice the
                # reference's.
                batch_out_cap=(
                    max(
                        2 * BATCH_MEMORY_BYTES, len(placed) * (2 * self.output_bytes_per_call + MiB)
                    )
                    if is_sub
                    else None
                ),
                check_unchanged=self.spec.format == "kernelbench",
                events=events,
            )
        except BatchStop as stop:
            if not is_sub:
                raise RuntimeError(f"the reference process: {stop.message}") from None
            if stop.kind == "too_large":
                raise Stop(Verdict.WRONG_ANSWER, stop.message) from None
            raise self.violation(f"the submission process: {stop.message}") from None
        if is_sub:
            if batch.violations:
                raise self.violation("after a batch of calls: " + "; ".join(batch.violations))
            self._check_outside("after a batch of calls")
            if not compiles:
                # torch.compile runs the C++ compiler as a child process on a first call
                # (a correctness trial, never timed); later batches are checked.
                self._check_other_threads(batch)
            self._check_pinned()
        return batch

    def _check_pinned(self) -> None:
        assert self.sub is not None
        if self.threads == 1 and procstat.unpinned(self.sub.process.host_pids(), self.cpu):
            raise self.violation(
                "the submission moved itself off the CPU its grading runs on "
                "(sched_setaffinity): reference and submission must be timed on the same core"
            )

    def _check_other_threads(self, batch: Batch) -> None:
        """With one thread per process, nothing in the sandbox but the harness's main
        thread has any business using the CPU during a batch."""
        if self.threads != 1 or self.device != "cpu":
            return
        allowed = max(OTHER_THREADS_SLACK_S, 0.05 * batch.cpu_s)
        if batch.other_threads_s > allowed:
            raise self.violation(
                f"{batch.other_threads_s:.3g} s of CPU time in a batch ran outside the harness's "
                "main thread (another thread, a child process or the sandbox's init): "
                "work done outside the calls"
            )

    def profile_submission(self, calls: int) -> float | None:
        """GPU hosts: the profiler's device time per call of the last inputs."""
        assert self.sub is not None
        reply = self._turn(
            self.sub,
            "profile",
            {"calls": calls},
            timeout_s=self.remaining(60.0 + calls * self.spec.timing.call_timeout_s),
            max_bytes=MiB,
        )
        value = reply.header.get("device_time_s")
        return float(value) if is_number(value) else None

    # -- checking a pair ------------------------------------------------------------------

    def check_pair(self, pair: Pair) -> list[Comparison]:
        """Check every call of a pair; integrity failures raise, mismatches are returned."""
        began = time.monotonic()
        assert pair.ref is not None and pair.sub is not None
        comparisons: list[Comparison] = []
        earlier: list[tuple[int, int]] = []
        calls = list(zip(pair.ref.calls, pair.sub.calls, strict=True))
        for index, (ref, sub) in enumerate(calls):
            self._check_call(index, ref, sub, earlier)
        for index, (_, sub) in enumerate(calls):
            if sub.changed_after_read:
                raise self.violation(
                    f"the output of call {index + 1} changed after it was read, without "
                    "sharing an address with a later output (memory moved or mapped twice): "
                    "an output must stay as returned until the batch ends"
                )
        for index, (ref, sub) in enumerate(calls):
            comparison = compare_outputs(
                ref.node, ref.value, sub.node, sub.value,
                self.spec.tolerance_for, judge_values=not self.has_check,
            )  # fmt: skip
            if comparison.integrity:
                raise self.violation(f"call {index + 1}: {comparison.integrity}")
            comparisons.append(comparison)
        if self.has_check:
            self._apply_reference_checks(pair, pair.sub.calls, comparisons)
        self.report.checked_calls += len(comparisons)
        self.phases["comparison"] = self.phases.get("comparison", 0.0) + time.monotonic() - began
        pair.comparisons = comparisons
        return comparisons

    def _check_call(self, index: int, ref: Call, sub: Call, earlier: list[tuple[int, int]]) -> None:
        if not sub.guards_intact:
            raise Stop(
                Verdict.WRONG_ANSWER,
                f"call {index + 1} wrote outside its input tensors "
                "(the guard bands around them changed)",
            )
        if not sub.inputs_unchanged:
            raise self.violation(f"call {index + 1} modified its input tensors in place")
        if sub.shared_mapping is not None and ref.shared_mapping is None:
            if "benchwright-arena" in sub.shared_mapping:
                raise self.violation(
                    f"call {index + 1} returned a view of its input (memory of its input "
                    "arena) where the reference returns new memory: no work was done"
                )
            raise self.violation(
                f"call {index + 1} returned memory mapped from "
                f"{clean_text(sub.shared_mapping, 80)}, which other mappings can alias: "
                "an output must be the call's own (private, anonymous) memory"
            )
        if sub.held_before and not ref.held_before:
            raise self.violation(
                f"call {index + 1} returned memory its process already held before the "
                "batch began (a buffer kept from an earlier call) where the reference "
                "returns new memory: each call must allocate its output, since a kept "
                "buffer skips that cost and overwrites what a caller kept"
            )
        # The storages the harness names and the bytes the grader read: the first are the
        # submission's word, the second are where its answer really is.
        storages = [*sub.info.storages, *sub.info.read]
        if any(overlaps(new, old) for new in storages for old in earlier):
            raise Stop(
                Verdict.WRONG_ANSWER,
                f"call {index + 1} returned memory shared with an earlier call's output: "
                "each call must return its own result",
            )
        earlier.extend(storages)
        ref_views = any(overlaps(storage, ref.arena_range) for storage in ref.info.storages)
        if not ref_views and any(overlaps(storage, sub.arena_range) for storage in storages):
            raise self.violation(
                f"call {index + 1} returned a view of its input where the reference returns "
                "new memory: no work was done"
            )

    def require_correct(self, pair: Pair, context: str) -> None:
        for index, comparison in enumerate(self.check_pair(pair)):
            if not comparison.ok:
                where = f"{context}, call {index + 1}"
                # The failing call goes into the correctness table with its errors, as
                # a trial would: the table must not read "all passed, error 0".
                shape = self.timing_shape()
                done = sum(1 for t in self.report.correctness if t.shape == shape.name)
                self.report.correctness.append(
                    TrialResult(
                        shape=shape.name,
                        trial=done + 1,
                        ok=False,
                        seed=f"{pair.seeds[index]:x}",
                        max_abs_error=comparison.max_abs_error,
                        max_rel_error=comparison.max_rel_error,
                        shapes=comparison.shapes,
                        dtypes=comparison.dtypes,
                        message=f"{where}: {comparison.full_message}",
                    )
                )
                raise Stop(
                    Verdict.WRONG_ANSWER,
                    f"{where}: {comparison.message}",
                    notes=f"{where}: {comparison.full_message}",
                )

    def _apply_reference_checks(
        self, pair: Pair, calls: list[Call], comparisons: list[Comparison]
    ) -> None:
        """GPU MODE: the task's own check_implementation, run in the inputs process on
        the original inputs and on each output already read and validated here: one
        request per output, and only for outputs whose structure, dtypes and shapes
        already match the reference's (the others have failed anyway)."""
        for index, (call, comparison) in enumerate(zip(calls, comparisons, strict=True)):
            if comparison.ok:
                self._reference_check(pair, index, call.value, comparison)

    def _reference_check(self, pair: Pair, index: int, value: Any, comparison: Comparison) -> None:
        assert self.gen is not None
        packed: list[memoryview] = []
        try:
            output = pack_tree(value, packed)
        except ProtocolError as exc:
            comparison.fail(f"the output cannot be given to the task's check: {exc}")
            return
        blobs: list[Any] = []
        inputs = [_own_blobs(pair.inputs[index], pair.input_blobs, blobs)]
        header = {"inputs": inputs, "outputs": [_shift_blobs(output, len(blobs))]}
        blobs.extend(packed)
        if len(json.dumps(header)) > MAX_HEADER_BYTES // 2:
            comparison.fail("the output is too large to give to the task's check")
            return
        timeout = self.remaining(120.0 + 10 * self.spec.timing.call_timeout_s, trusted=True)
        try:
            reply = self._turn(
                self.gen, "check", header, blobs=blobs, timeout_s=timeout, max_bytes=16 * MiB
            )
        except SideFailure as failure:
            if failure.kind != "error":
                raise
            comparison.fail(
                "the task's check_implementation raised on this output",
                detail=clean_text(failure.message, 1000),
            )
            return
        results = reply.header.get("results")
        if not isinstance(results, list) or len(results) != 1 or not isinstance(results[0], list):
            raise RuntimeError("the inputs process sent malformed check results")
        ok, message = (results[0] + [False, ""])[:2]
        if not ok:
            comparison.fail(
                "the task's check_implementation rejects the output",
                detail=clean_text(message, 1000),
            )

    # -- correctness ---------------------------------------------------------------------

    def _correctness(self) -> None:
        for shape in self.shapes:
            self.setup(shape)
            for trial in range(self.trials):
                pair = self.run_pair(1)
                comparison = self.check_pair(pair)[0]
                self._record_trial(shape, trial, pair, comparison)
                if not comparison.ok:
                    where = f"shape set {shape.name!r}, trial {trial + 1}"
                    raise Stop(
                        Verdict.WRONG_ANSWER,
                        f"{where}: {comparison.message}",
                        notes=f"{where}: {comparison.full_message}",
                    )
        self.report.integrity.checks.extend(CALL_CHECKS)

    def _record_trial(
        self, shape: ShapeSet, trial: int, pair: Pair, comparison: Comparison
    ) -> None:
        self.report.correctness.append(
            TrialResult(
                shape=shape.name,
                trial=trial + 1,
                ok=comparison.ok,
                seed=f"{pair.seeds[0]:x}",
                max_abs_error=comparison.max_abs_error,
                max_rel_error=comparison.max_rel_error,
                shapes=comparison.shapes,
                dtypes=comparison.dtypes,
                message=comparison.full_message,
            )
        )

    def timing_shape(self) -> ShapeSet:
        wanted = self.spec.timing.shape
        for shape in self.shapes:
            if shape.name == wanted:
                return shape
        return max(self.shapes, key=lambda shape: self.input_bytes.get(shape.name, 0))


# Gradings running now in this process, by the CPU they time on.
_CPU_USERS: Counter[int] = Counter()
_CPU_LOCK = threading.Lock()


def _grading_cpu() -> int:
    """The CPU a grading's timed processes run on: the only one this thread may use, or
    else the one fewest of this process's gradings use (the one it runs on now among
    equals). Workers in separate processes are best started one per CPU, each pinned
    to its own (then this is simply that CPU)."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        current = procstat.current_cpu()
    except (OSError, ValueError, IndexError):
        current = allowed[0]
    with _CPU_LOCK:
        cpu = min(allowed, key=lambda c: (_CPU_USERS[c], c != current, c))
        _CPU_USERS[cpu] += 1
    return cpu


def _release_cpu(cpu: int) -> None:
    with _CPU_LOCK:
        _CPU_USERS[cpu] -= 1


def _own_blobs(node: Any, blobs: list[memoryview], into: list[Any]) -> Any:
    """``node`` (a packed tree over ``blobs``) renumbered over the blobs it uses,
    which are appended to ``into``."""
    if isinstance(node, dict):
        copied = {key: _own_blobs(value, blobs, into) for key, value in node.items()}
        if node.get("k") == "tensor" and isinstance(node.get("blob"), int):
            into.append(blobs[node["blob"]])
            copied["blob"] = len(into) - 1
        return copied
    if isinstance(node, list):
        return [_own_blobs(item, blobs, into) for item in node]
    return node


def _shift_blobs(node: Any, offset: int) -> Any:
    if isinstance(node, dict):
        shifted = {key: _shift_blobs(value, offset) for key, value in node.items()}
        if node.get("k") == "tensor" and isinstance(node.get("blob"), int):
            shifted["blob"] = node["blob"] + offset
        return shifted
    if isinstance(node, list):
        return [_shift_blobs(item, offset) for item in node]
    return node


def _tail(data: bytes) -> str:
    text = data[-LOG_TAIL_BYTES:].decode("utf-8", "replace")
    return text if len(data) <= LOG_TAIL_BYTES else "…" + text


def _exit_status(result: RunResult) -> str:
    if result.signal is not None:
        return f"killed by signal {result.signal}"
    return f"exit code {result.exit_code}"
