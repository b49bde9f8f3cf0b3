"""One side's batch of calls, as the trusted grader runs it.

A batch is the only time a harness process runs while the grader measures:

1. the sandbox is frozen; its CPU time and each of its threads' are read;
2. it is thawed, and for each call in turn the grader writes the call's
   inputs into the arena, sends ``call``, waits for the reply, reads the
   output out of the process's memory, and reads the guard bands (and, for
   KernelBench, the inputs) back from the arena. Only then does the next
   call's input exist anywhere the sandbox can reach: no call can see, or
   work ahead on, inputs that are not yet its own, and no output can change
   after it has been read;
3. ``audit`` collects the in-process checks and lets the batch's outputs go;
4. the sandbox is frozen again and its CPU time read.

The batch's figure is the CPU time the kernel counted for everything in the
sandbox between the two freezes: every process and thread, init included, so
work hidden in another thread, a timer, a finalizer or a mode still counts,
and nothing can run while frozen. The grader's wall clock around each call
and the harness's own clock are kept beside it as witnesses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sandboxes import procstat
from sandboxes.arena import ArenaError
from sandboxes.base import SandboxError
from sandboxes.cgroups import FreezeTimeout

from .harness.protocol import ProtocolError, is_number
from .inputs import Placed
from .outputs import OutputInfo, OutputTooLarge, OutputUnusable
from .side import Side, SideFailure, clean_text

# Blocks of this size and more get a mapping of their own from the harness processes'
# allocator, new each time (``MALLOC_ENV`` in grading.py sets it; 32 MiB is the
# largest threshold glibc takes); smaller ones come from the heap.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024

# Run time of threads other than the harness's main thread, per batch, that is
# still "nothing": the kernel's accounting of a thread woken for a signal.
OTHER_THREADS_SLACK_S = 0.005


class BatchStop(Exception):
    """The batch cannot go on because of what the side did (its verdict follows)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # integrity, wrong_answer, too_large
        self.message = message


@dataclass
class Call:
    value: Any
    node: Any
    info: OutputInfo
    inside_s: float  # the harness's own clock
    event_s: float | None  # CUDA events (GPU hosts)
    wall_s: float  # the grader's clock around the request
    arena_range: tuple[int, int]
    guards_intact: bool
    inputs_unchanged: bool
    # The harness's own CPU time around the call, as it reports it (None if it did
    # not): believed only on the reference's side, where it is the harness's code.
    keep_s: float | None = None
    # The mapping of something else (the arena, a file, a memfd, shared memory) an
    # output lies in, if any: the same physical memory can be mapped twice, so two
    # outputs, or an output and an input, can share memory at addresses that do not
    # overlap.
    shared_mapping: str | None = None
    # Read again at the end of the batch, the output no longer held what was read.
    # Addresses that do not overlap can still be the same memory over time: pages
    # moved from one call's output to the next (mremap) or rewritten through another
    # mapping change an answer already given.
    changed_after_read: bool = False
    # An output lies in a mapping the process already had when the batch began (a
    # buffer kept from an earlier call; see ``_find_held_memory``).
    held_before: bool = False


@dataclass
class Batch:
    role: str
    calls: list[Call] = field(default_factory=list)
    cpu_s: float = 0.0  # the sandbox's CPU time between the freezes
    wall_s: float = 0.0  # the grader's clock from thaw to freeze
    # CPU time of everything but the harness's main thread: other threads, init,
    # processes that came and went.
    other_threads_s: float = 0.0
    violations: list[str] = field(default_factory=list)
    audit_keep_s: float | None = None  # the harness's CPU time for the batch's audit

    @property
    def count(self) -> int:
        return len(self.calls)

    @property
    def inside_s(self) -> float:
        return sum(call.inside_s for call in self.calls)

    @property
    def keep_s(self) -> float | None:
        """The harness's own bookkeeping over the batch, as it reported it."""
        parts = [call.keep_s for call in self.calls] + [self.audit_keep_s]
        if any(part is None for part in parts):
            return None
        return sum(part for part in parts if part is not None)

    def per_call(self, figure: str) -> float:
        if figure == "cpu_time":
            return self.cpu_s / self.count
        if figure == "cuda_events":
            return sum(call.event_s or 0.0 for call in self.calls) / self.count
        return sum(call.wall_s for call in self.calls) / self.count


def run_batch(
    side: Side,
    inputs: list[Placed],
    *,
    call_timeout_s: float,
    first_call_timeout_s: float | None = None,
    out_cap: int,
    check_unchanged: bool,
    events: bool = False,
    batch_out_cap: int | None = None,
) -> Batch:
    """Run ``inputs`` on ``side`` as one measured batch (see the module docstring).
    ``out_cap`` bounds the bytes of one call's output, ``batch_out_cap`` all of them
    (the grader holds a batch's outputs until it compares them)."""
    assert side.inputs is not None
    batch = Batch(role=side.role)
    threads_before = _frozen(side)
    held = procstat.mapping_ranges(side.pid)
    cpu_before = side.cpu_s()
    _write(side, inputs[0])
    side.thaw()
    began = time.perf_counter()
    left = batch_out_cap if batch_out_cap is not None else out_cap * len(inputs)
    for index, placed in enumerate(inputs):
        if index:
            _write(side, placed)
        timeout_s = first_call_timeout_s if index == 0 and first_call_timeout_s else call_timeout_s
        call = _call(side, placed, timeout_s, min(out_cap, left), check_unchanged, events)
        left -= call.info.nbytes
        batch.calls.append(call)
    _find_shared_memory(side, batch)  # before audit lets the outputs go
    _find_held_memory(side, batch, held)
    _check_outputs_kept(side, batch)
    audit = side.request(
        "audit", {"full": False}, timeout_s=max(1.0, call_timeout_s), max_bytes=1 << 20
    )
    batch.wall_s = time.perf_counter() - began
    threads_after = _frozen(side)
    batch.cpu_s = side.cpu_s() - cpu_before
    main = (side.pid, side.pid)
    main_s = threads_after.get(main, 0.0) - threads_before.get(main, 0.0)
    batch.other_threads_s = max(0.0, batch.cpu_s - main_s)
    batch.violations = _violations(audit.header.get("violations"))
    batch.audit_keep_s = _seconds(audit.header.get("keep"))
    return batch


def _find_shared_memory(side: Side, batch: Batch) -> None:
    """Outputs that lie in memory other mappings can see (shared, or a file's)."""
    mappings = procstat.foreign_mappings(side.pid)
    for call in batch.calls:
        for low, size in (*call.info.storages, *call.info.read):
            for start, end, name in mappings:
                if size and low < end and start < low + size:
                    call.shared_mapping = name


def _find_held_memory(side: Side, batch: Batch, held: set[tuple[int, int]]) -> None:
    """Large outputs in a mapping that existed before the batch began. An output of
    ``MMAP_THRESHOLD_BYTES`` and more gets a mapping of its own, new each call, whose
    pages are faulted in as it is written; one that lies in a mapping kept from before
    was not allocated by the call (a pool of buffers handed out in turn), which skips
    the cost the reference pays. Smaller outputs come from the heap, whose mapping
    grows or not from call to call in either process, so they are not judged here
    (reuse within a batch is: ``check_pair``); the grader also compares with the
    reference's outputs before deciding."""
    if not held:
        return
    mappings = procstat.mapping_ranges(side.pid)
    for call in batch.calls:
        for low, size in (*call.info.storages, *call.info.read):
            if size < MMAP_THRESHOLD_BYTES:
                continue
            for start, end in mappings:
                if start <= low < end and (start, end) in held:
                    call.held_before = True


def _check_outputs_kept(side: Side, batch: Batch) -> None:
    """Read every earlier output again and mark those that no longer hold what was
    read (the grader names a change after its address checks: see
    ``Call.changed_after_read``)."""
    for call in batch.calls[:-1]:  # the last one was read just now
        call.changed_after_read = side.output_changed(call.info)


def _write(side: Side, placed: Placed) -> None:
    assert side.inputs is not None
    try:
        side.inputs.write(placed)
    except ArenaError as exc:  # only the process inside can have made the arena refuse it
        raise BatchStop("integrity", f"its arena was tampered with ({exc})") from None


def _frozen(side: Side) -> dict[tuple[int, int], float]:
    try:
        side.freeze()
    except FreezeTimeout as exc:
        raise BatchStop("integrity", f"its processes could not be paused ({exc})") from None
    return side.thread_cpu()


def _call(
    side: Side,
    placed: Placed,
    timeout_s: float,
    out_cap: int,
    check_unchanged: bool,
    events: bool,
) -> Call:
    assert side.inputs is not None
    began = time.perf_counter()
    reply = side.request(
        "call", {"args": placed.tree, "events": events}, timeout_s=timeout_s, max_bytes=16 << 20
    )
    wall_s = time.perf_counter() - began
    header = reply.header
    violations = header.get("violations")
    if violations is not None:
        raise BatchStop("integrity", "after a call: " + "; ".join(_violations(violations)))
    inside_s, event_s = header.get("time"), header.get("event_time")
    arena = header.get("arena")
    if not is_number(inside_s) or inside_s < 0:
        raise BatchStop("integrity", "it sent a malformed call time")
    if event_s is not None and not is_number(event_s):
        raise BatchStop("integrity", "it sent a malformed event time")
    if not (isinstance(arena, list) and len(arena) == 2 and all(map(_is_address, arena))):
        raise BatchStop("integrity", "it sent a malformed arena address")
    try:
        value, info = side.read_output(header.get("out"), out_cap)
    except OutputTooLarge:
        raise BatchStop("too_large", "the output is far larger than the reference's") from None
    except OutputUnusable as exc:
        raise BatchStop("too_large", f"the output holds {exc}") from None
    except ProtocolError as exc:
        raise BatchStop("integrity", f"it described its output falsely ({exc})") from None
    try:
        guards = side.inputs.guards_intact(placed)
        unchanged = side.inputs.unchanged(placed) if check_unchanged else True
    except (ArenaError, SandboxError, OSError) as exc:
        raise BatchStop("integrity", f"its arena was tampered with ({exc})") from None
    return Call(
        value=value,
        node=header.get("out"),
        info=info,
        inside_s=float(inside_s),
        event_s=float(event_s) if event_s is not None else None,
        wall_s=wall_s,
        arena_range=(arena[0], arena[1]),
        guards_intact=guards,
        inputs_unchanged=unchanged,
        keep_s=_seconds(header.get("keep")),
    )


def _seconds(value: Any) -> float | None:
    """A reported duration, or None when it is not one (only the reference's is used)."""
    return float(value) if is_number(value) and value >= 0 else None


def _is_address(value: Any) -> bool:
    return type(value) is int and value >= 0


def _violations(value: Any) -> list[str]:
    if not isinstance(value, list):
        return ["it sent a malformed integrity report"]
    return [clean_text(item, 300) for item in value[:5]]


__all__ = ["OTHER_THREADS_SLACK_S", "Batch", "BatchStop", "Call", "SideFailure", "run_batch"]
