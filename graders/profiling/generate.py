"""Synthetic PyTorch (Kineto) traces of a GPU training loop with planted bottlenecks.

A profiling task needs a trace whose answers are known. ``generate`` simulates
a small training loop on an H100-like GPU (data loading, a forward and
backward pass of GEMM + elementwise layers, an optimizer step, an optional
all-reduce across ranks) and writes what ``torch.profiler`` would: operators,
runtime calls with correlation ids, the kernels and copies they launched,
flow events, one ``ProfilerStep#N`` per step. On request it plants the
bottlenecks tasks ask about:

* ``tiny_kernels``: a flood of 2-5 µs kernels whose launches take longer than
  they run, so the GPU waits on the host between them;
* ``host_syncs``: ``.item()`` calls (``aten::item`` →
  ``aten::_local_scalar_dense`` → a 4-byte pageable copy and
  ``cudaStreamSynchronize``) after which the GPU idles while the host goes on;
* ``pageable_copies``: device-to-host copies into pageable memory, which hold
  the host until they complete;
* ``allreduce_us``: an NCCL all-reduce per step, after all compute unless
  ``overlap_layers`` backward layers are still to run when it starts;
* the dominant GEMM (``gemm_us``) and, as a distractor, a smaller second one;
* ``dataloader_stall_us``: a long ``DataLoader.__next__`` at each step's start
  (the GPU idles once the work queued before it has run out, as on a real
  GPU: a stall shorter than that backlog hides);
* ``straggler_rank``/``straggler_us``: one rank's GEMMs run longer, and the
  others wait for it inside the all-reduce.

Distractors: ``second_gemm``, ``pinned_copy`` (a harmless pinned host-to-device
copy of the batch), ``sync_outside_steps`` (a ``cudaDeviceSynchronize``
before the first step).

The truth (``GeneratedTask.truth``) is computed here from the timeline the
generator built, with the conventions ``analysis.py`` documents, not by
calling the analyses; tests compare the two. The same config and seed give
the same traces, byte for byte.

    python -m graders.profiling.generate --config cfg.json --seed 3 --out dir/ [--gzip]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip as gzip_module
import json
import math
import random
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count, pairwise
from pathlib import Path
from typing import Any

import orjson

DOMINANT_GEMM = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    "_execute_segment_k_off_kernel__5x_cublas"
)
SECOND_GEMM = (
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
    "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)"
)
_CLAMP = (
    "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, "
    "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::"
    "{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>"
)
RELU_KERNEL = f"void at::native::vectorized_elementwise_kernel<4, {_CLAMP} >(int, {_CLAMP})"
_THRESHOLD = (
    "at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, "
    "float, float)::{lambda(float, float)#1}, std::array<char*, 3ul>"
)
THRESHOLD_KERNEL = (
    f"void at::native::vectorized_elementwise_kernel<4, {_THRESHOLD} >(int, {_THRESHOLD})"
)
_ADD = "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>"
TINY_KERNEL = f"void at::native::vectorized_elementwise_kernel<4, {_ADD} >(int, {_ADD})"
_ADAM = (
    "at::native::(anonymous namespace)::TensorListMetadata<4>, "
    "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
    "false>, float*, float, float, float, float, float, float, bool*, bool*"
)
ADAM_KERNEL = (
    f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<{_ADAM}>"
    "(at::native::(anonymous namespace)::TensorListMetadata<4>, "
    "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
    "false>, float*, float, float, float, float, float, float, bool*, bool*)"
)
ALLREDUCE_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
DATALOADER_NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"

COMPUTE_STREAM = 7
COMM_STREAM = 20
START_NS = 1_000_000_000
BASE_TIME_NS = 1_767_225_600_000_000_000
KERNEL_WAIT_NS = 30_000
"""The kernel-wait threshold of ``analysis.idle_time_by_cause`` (HTA's 30 µs)."""

FIRST_CORRELATION = 100_000
"""Kineto's correlation ids are large numbers; HTA 0.5.0 (under pandas 3) fails
on a trace whose ids all fit in a byte."""
OP_ENTRY_NS = 1_500
OP_EXIT_NS = 1_000
QUEUE_NS = 1_200
NORMAL_LOADER_NS = 20_000
JITTER = 0.03

_LAUNCH = ("cudaLaunchKernel", 211)
_MEMCPY = ("cudaMemcpyAsync", 41)
_KERNEL_SHAPES = {
    DOMINANT_GEMM: ([132, 4, 1], [384, 1, 1], 168, 213_248),
    SECOND_GEMM: ([64, 8, 1], [128, 1, 1], 126, 66_560),
    RELU_KERNEL: ([1024, 1, 1], [128, 1, 1], 24, 0),
    THRESHOLD_KERNEL: ([1024, 1, 1], [128, 1, 1], 28, 0),
    TINY_KERNEL: ([1, 1, 1], [64, 1, 1], 16, 0),
    ADAM_KERNEL: ([320, 1, 1], [512, 1, 1], 62, 0),
    ALLREDUCE_KERNEL: ([16, 1, 1], [640, 1, 1], 96, 36_864),
}
_DEVICE = {
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85_031_714_816,
    "computeMajor": 9,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "regsPerMultiprocessor": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "sharedMemPerMultiprocessor": 233472,
    "numSms": 132,
    "sharedMemPerBlockOptin": 232448,
}


@dataclass(frozen=True)
class GeneratorConfig:
    """What to simulate. Times in microseconds; counts are per step."""

    steps: int = 3
    ranks: int = 1
    layers: int = 4
    gemm_us: float = 150.0
    elementwise_us: float = 15.0
    launch_us: float = 6.0
    op_us: float = 2.5
    tiny_kernels: int = 0
    tiny_kernel_us: tuple[float, float] = (2.0, 5.0)
    tiny_host_us: float = 10.0
    host_syncs: int = 0
    sync_gap_us: float = 40.0
    pageable_copies: int = 0
    pageable_bytes: int = 8 << 20
    pageable_gbps: float = 6.0
    allreduce_us: float = 0.0
    overlap_layers: int = 0
    dataloader_stall_us: float = 0.0
    straggler_rank: int = -1
    straggler_us: float = 0.0
    second_gemm: bool = False
    pinned_copy: bool = False
    sync_outside_steps: bool = False

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> GeneratorConfig:
        """A config from JSON-like values; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown generator settings: {', '.join(unknown)}")
        settings = dict(values)
        if "tiny_kernel_us" in settings:
            low, high = settings["tiny_kernel_us"]
            settings["tiny_kernel_us"] = (float(low), float(high))
        return cls(**settings)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.ranks < 1 or self.layers < 1:
            raise ValueError("steps, ranks and layers must be at least 1")
        if not 0 <= self.overlap_layers <= self.layers:
            raise ValueError("overlap_layers must be between 0 and layers")
        if self.straggler_rank >= self.ranks:
            raise ValueError("straggler_rank must be one of the ranks (or -1 for none)")
        if self.straggler_rank >= 0 and self.allreduce_us <= 0:
            raise ValueError("a straggler needs an all-reduce to make the others wait")


@dataclass
class GeneratedTask:
    """One Kineto-shaped trace dict per rank, and the values planted in them."""

    traces: list[dict[str, Any]]
    truth: dict[str, Any]


@dataclass(slots=True)
class _GpuOp:
    """A kernel or copy as planted: nanoseconds on the trace clock."""

    name: str
    kind: str
    stream: int
    start: int
    end: int
    call_start: int
    call_end: int
    step: int
    correlation: int
    memory: str = ""
    nbytes: int = 0
    event: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Marker:
    """A planted CPU event the truth refers to (a sync, a data-loader call)."""

    start: int
    end: int
    step: int
    event: dict[str, Any]


def generate(config: GeneratorConfig | Mapping[str, Any], seed: int) -> GeneratedTask:
    """Simulate the configured training loop on every rank; return the traces and truth."""
    if not isinstance(config, GeneratorConfig):
        config = GeneratorConfig.from_mapping(config)
    ranks = [_Rank(rank, config, seed) for rank in range(config.ranks)]
    if config.sync_outside_steps:
        for rank in ranks:
            rank.synchronize("cudaDeviceSynchronize", record=False)
            rank.cpu += 50_000
    for number in range(1, config.steps + 1):
        _simulate_step(ranks, config, number)
    traces = [rank.trace_dict() for rank in ranks]
    return GeneratedTask(traces=traces, truth=_truth(ranks, config, seed))


def _simulate_step(ranks: list[_Rank], config: GeneratorConfig, number: int) -> None:
    """One training step on every rank; the ranks meet in the all-reduce."""
    before_collective = config.layers - (config.overlap_layers if config.allreduce_us > 0 else 0)
    for rank in ranks:
        rank.begin_step(number)
        rank.load_batch()
        rank.forward()
        rank.kernel_flood()
        rank.backward(range(config.layers - 1, config.layers - 1 - before_collective, -1))
    collective_end = 0
    if config.allreduce_us > 0:
        collectives = [rank.start_allreduce() for rank in ranks]
        last_arrival = max(op.start for op in collectives)
        collective_end = last_arrival + ranks[0].jitter(_ns(config.allreduce_us))
        for rank, op in zip(ranks, collectives, strict=True):
            rank.finish_collective(op, collective_end)
    for rank in ranks:
        rank.backward(range(config.layers - 1 - before_collective, -1, -1))
        rank.optimizer(after=collective_end)
        rank.pageable_copies()
        rank.end_step()


def _ns(microseconds: float) -> int:
    return round(microseconds * 1000)


class _Rank:
    """One rank's process: a CPU thread that runs operators and launches work,
    and the GPU streams that run it. ``cpu`` is the thread's clock; ``free``
    says when each stream finishes the work queued so far."""

    def __init__(self, rank: int, config: GeneratorConfig, seed: int) -> None:
        self.rank = rank
        self.config = config
        self.rng = random.Random(f"{seed}:{rank}")
        self.pid = 4100 + rank
        self.device = rank
        self.cpu = START_NS
        self.free = {COMPUTE_STREAM: START_NS, COMM_STREAM: START_NS}
        self.events: list[dict[str, Any]] = []
        self.ops: list[_GpuOp] = []
        self.steps: list[tuple[int, int, int]] = []
        self.syncs: list[_Marker] = []
        self.loaders: list[_Marker] = []
        self.step = -1
        self.step_start = 0
        self.correlations = count(FIRST_CORRELATION)
        self.external_ids = count(1)
        self.open_ops: list[int] = []
        slow = rank == config.straggler_rank
        self.gemm_ns = _ns(config.gemm_us) + (
            _ns(config.straggler_us) // (3 * config.layers) if slow else 0
        )

    def jitter(self, nanoseconds: int) -> int:
        return max(1, round(nanoseconds * (1 + self.rng.uniform(-JITTER, JITTER))))

    # --- events -------------------------------------------------------------------------------

    def _emit(
        self, cat: str, name: str, pid: int, tid: int, start: int, end: int, args: dict[str, Any]
    ) -> dict[str, Any]:
        event = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": start / 1000,
            "dur": (end - start) / 1000,
            "args": args,
        }
        self.events.append(event)
        return event

    def _flow(self, correlation: int, call_start: int, gpu_start: int, stream: int) -> None:
        self.events.append(
            {
                "ph": "s",
                "id": correlation,
                "pid": self.pid,
                "tid": self.pid,
                "ts": call_start / 1000,
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        self.events.append(
            {
                "ph": "f",
                "id": correlation,
                "pid": self.device,
                "tid": stream,
                "ts": gpu_start / 1000,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )

    @contextmanager
    def operator(self, name: str, *, cat: str = "cpu_op") -> Iterator[None]:
        """An operator (or ``record_function`` annotation) around what the block does."""
        start = self.cpu
        external_id = next(self.external_ids)
        self.cpu += self.jitter(OP_ENTRY_NS + _ns(self.config.op_us) // 2)
        self.open_ops.append(external_id)
        yield
        self.open_ops.pop()
        self.cpu += self.jitter(OP_EXIT_NS + _ns(self.config.op_us) // 2)
        args = {"External id": external_id, "Record function id": 0, "Ev Idx": external_id - 1}
        self._emit(cat, name, self.pid, self.pid, start, self.cpu, args)

    def _runtime_call(
        self, name: str, cbid: int, start: int, end: int, correlation: int
    ) -> dict[str, Any]:
        external_id = self.open_ops[-1] if self.open_ops else 0
        args = {"External id": external_id, "cbid": cbid, "correlation": correlation}
        return self._emit("cuda_runtime", name, self.pid, self.pid, start, end, args)

    # --- launching work -----------------------------------------------------------------------

    def launch(
        self,
        name: str,
        duration: int,
        *,
        kind: str = "compute",
        stream: int = COMPUTE_STREAM,
        after: int = 0,
        extra: dict[str, Any] | None = None,
    ) -> _GpuOp:
        """``cudaLaunchKernel`` now; the kernel starts once the call has gone
        through, the stream is free and ``after`` has passed."""
        call_start = self.cpu
        self.cpu += self.jitter(_ns(self.config.launch_us))
        correlation = next(self.correlations)
        start = max(self.free[stream], self.cpu + self.jitter(QUEUE_NS), after)
        op = _GpuOp(
            name,
            kind,
            stream,
            start,
            start + duration,
            call_start,
            self.cpu,
            self.step,
            correlation,
        )
        self.free[stream] = op.end
        self._runtime_call(*_LAUNCH, call_start, self.cpu, correlation)
        grid, block, registers, shared = _KERNEL_SHAPES[name]
        args = {
            "External id": self.open_ops[-1] if self.open_ops else 0,
            "queued": 0,
            "device": self.device,
            "context": 1,
            "stream": stream,
            "correlation": correlation,
            "registers per thread": registers,
            "shared memory": shared,
            "blocks per SM": round(grid[0] * grid[1] / 132, 6),
            "warps per SM": round(grid[0] * grid[1] * block[0] / 32 / 132, 6),
            "grid": grid,
            "block": block,
            "est. achieved occupancy %": 0 if name == TINY_KERNEL else 50,
            **(extra or {}),
        }
        op.event = self._emit("kernel", name, self.device, stream, op.start, op.end, args)
        self._flow(correlation, call_start, op.start, stream)
        self.ops.append(op)
        return op

    def copy(
        self, direction: str, memory: str, nbytes: int, *, gbps: float, blocking: bool
    ) -> _GpuOp:
        """``cudaMemcpyAsync``: a pageable device-to-host copy holds the host until
        the copy has finished; a pinned one returns at once."""
        call_start = self.cpu
        correlation = next(self.correlations)
        start = max(self.free[COMPUTE_STREAM], call_start + self.jitter(QUEUE_NS + 2_000))
        end = start + self.jitter(1_500 + round(nbytes / gbps))
        self.free[COMPUTE_STREAM] = end
        self.cpu = (
            end + self.jitter(1_500)
            if blocking
            else call_start + self.jitter(_ns(self.config.launch_us))
        )
        source, target = ("Device", memory) if direction == "DtoH" else (memory, "Device")
        name = f"Memcpy {direction} ({source} -> {target})"
        op = _GpuOp(
            name,
            "memory",
            COMPUTE_STREAM,
            start,
            end,
            call_start,
            self.cpu,
            self.step,
            correlation,
            memory.lower(),
            nbytes,
        )
        self._runtime_call(*_MEMCPY, call_start, self.cpu, correlation)
        args = {
            "External id": self.open_ops[-1] if self.open_ops else 0,
            "device": self.device,
            "context": 1,
            "stream": COMPUTE_STREAM,
            "correlation": correlation,
            "bytes": nbytes,
            "memory bandwidth (GB/s)": round(nbytes / (end - start), 6),
        }
        op.event = self._emit("gpu_memcpy", name, self.device, COMPUTE_STREAM, start, end, args)
        self._flow(correlation, call_start, start, COMPUTE_STREAM)
        self.ops.append(op)
        return op

    def synchronize(self, name: str = "cudaStreamSynchronize", *, record: bool = True) -> None:
        """A host-blocking call: returns once the GPU has finished the queued work."""
        call_start = self.cpu
        drained = (
            max(self.free.values())
            if name == "cudaDeviceSynchronize"
            else self.free[COMPUTE_STREAM]
        )
        self.cpu = max(call_start + self.jitter(1_500), drained + self.jitter(800))
        cbid = 165 if name == "cudaDeviceSynchronize" else 131
        event = self._runtime_call(name, cbid, call_start, self.cpu, next(self.correlations))
        if record:
            self.syncs.append(_Marker(call_start, self.cpu, self.step, event))

    # --- the training loop --------------------------------------------------------------------

    def begin_step(self, number: int) -> None:
        self.step = number
        self.step_start = self.cpu

    def end_step(self) -> None:
        self.cpu += self.jitter(3_000)
        args = {"External id": next(self.external_ids), "Record function id": 0}
        self._emit(
            "user_annotation",
            f"ProfilerStep#{self.step}",
            self.pid,
            self.pid,
            self.step_start,
            self.cpu,
            args,
        )
        self.steps.append((self.step, self.step_start, self.cpu))
        self.cpu += self.jitter(2_000)

    def load_batch(self) -> None:
        """``next(loader)``: long when a stall is planted; then the batch's copy."""
        stall = _ns(self.config.dataloader_stall_us) or NORMAL_LOADER_NS
        start = self.cpu
        self.cpu += self.jitter(stall)
        args = {"External id": next(self.external_ids), "Record function id": 0}
        event = self._emit(
            "user_annotation", DATALOADER_NEXT, self.pid, self.pid, start, self.cpu, args
        )
        self.loaders.append(_Marker(start, self.cpu, self.step, event))
        if self.config.pinned_copy:
            with (
                self.operator("aten::to"),
                self.operator("aten::_to_copy"),
                self.operator("aten::copy_"),
            ):
                self.copy("HtoD", "Pinned", 4 << 20, gbps=25.0, blocking=False)

    def forward(self) -> None:
        config = self.config
        sync_after = [(i * config.layers) // config.host_syncs for i in range(config.host_syncs)]
        for layer in range(config.layers):
            with self.operator("aten::linear"), self.operator("aten::addmm"):
                self.launch(DOMINANT_GEMM, self.jitter(self.gemm_ns))
            if config.second_gemm and layer % 2 == 0:
                with self.operator("aten::mm"):
                    self.launch(SECOND_GEMM, self.jitter(self.gemm_ns // 3))
            with self.operator("aten::relu"):
                self.launch(RELU_KERNEL, self.jitter(_ns(config.elementwise_us)))
            for _ in range(sync_after.count(layer)):
                self.item()

    def item(self) -> None:
        """``tensor.item()``: copy one scalar to the host and wait for it."""
        with self.operator("aten::item"), self.operator("aten::_local_scalar_dense"):
            self.copy("DtoH", "Pageable", 4, gbps=1.0, blocking=True)
            self.synchronize()
        self.cpu += self.jitter(_ns(self.config.sync_gap_us))

    def kernel_flood(self) -> None:
        low, high = self.config.tiny_kernel_us
        for _ in range(self.config.tiny_kernels):
            with self.operator("aten::add_"):
                self.launch(TINY_KERNEL, round(self.rng.uniform(low, high) * 1000))
            self.cpu += self.jitter(_ns(self.config.tiny_host_us))  # the Python loop around it

    def backward(self, layers: range) -> None:
        for _ in layers:
            with (
                self.operator("autograd::engine::evaluate_function: ReluBackward0"),
                self.operator("aten::threshold_backward"),
            ):
                self.launch(THRESHOLD_KERNEL, self.jitter(_ns(self.config.elementwise_us)))
            with (
                self.operator("autograd::engine::evaluate_function: AddmmBackward0"),
                self.operator("AddmmBackward0"),
            ):
                for _ in range(2):
                    with self.operator("aten::mm"):
                        self.launch(DOMINANT_GEMM, self.jitter(self.gemm_ns))

    def start_allreduce(self) -> _GpuOp:
        """Launch the all-reduce of the gradients computed so far; it ends when
        the last rank has arrived (``finish_collective``)."""
        collective = {
            "Collective name": "allreduce",
            "In msg nelems": 25_165_824,
            "Out msg nelems": 25_165_824,
            "Group size": self.config.ranks,
            "dtype": "BFloat16",
            "Process Group Name": "0",
            "Process Group Description": "default_pg",
        }
        with self.operator("nccl:all_reduce"):
            return self.launch(
                ALLREDUCE_KERNEL,
                0,
                kind="communication",
                stream=COMM_STREAM,
                after=self.free[COMPUTE_STREAM],
                extra=collective,
            )

    def finish_collective(self, op: _GpuOp, end: int) -> None:
        op.end = end
        op.event["dur"] = (end - op.start) / 1000
        self.free[COMM_STREAM] = end

    def optimizer(self, *, after: int) -> None:
        with self.operator("Optimizer.step#AdamW.step"):
            if after:
                correlation = next(self.correlations)
                self._runtime_call(
                    "cudaStreamWaitEvent", 146, self.cpu, self.cpu + self.jitter(2_000), correlation
                )
                self.cpu += self.jitter(2_000)
            for _ in range(2):
                with self.operator("aten::_fused_adamw_"):
                    self.launch(
                        ADAM_KERNEL, self.jitter(_ns(self.config.elementwise_us) * 2), after=after
                    )

    def pageable_copies(self) -> None:
        for _ in range(self.config.pageable_copies):
            with (
                self.operator("aten::to"),
                self.operator("aten::_to_copy"),
                self.operator("aten::copy_"),
            ):
                self.copy(
                    "DtoH",
                    "Pageable",
                    self.config.pageable_bytes,
                    gbps=self.config.pageable_gbps,
                    blocking=True,
                )

    # --- the trace ----------------------------------------------------------------------------

    def trace_dict(self) -> dict[str, Any]:
        """The trace as ``torch.profiler`` exports it, events in time order."""
        order = sorted(range(len(self.events)), key=lambda i: (self.events[i]["ts"], i))
        events = self._metadata_events() + [self.events[i] for i in order]
        self.positions = {id(event): i for i, event in enumerate(events)}
        return {
            "schemaVersion": 1,
            "deviceProperties": [{"id": self.device, **_DEVICE}],
            "distributedInfo": {
                "backend": "nccl",
                "rank": self.rank,
                "world_size": self.config.ranks,
            },
            "record_shapes": 1,
            "with_stack": 0,
            "traceEvents": events,
            "traceName": f"rank{self.rank}.json",
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": BASE_TIME_NS,
        }

    def _metadata_events(self) -> list[dict[str, Any]]:
        start = START_NS / 1000
        lanes = [
            {
                "name": "process_name",
                "ph": "M",
                "ts": start,
                "pid": self.pid,
                "tid": 0,
                "args": {"name": "python3"},
            },
            {
                "name": "thread_name",
                "ph": "M",
                "ts": start,
                "pid": self.pid,
                "tid": self.pid,
                "args": {"name": f"thread {self.pid} (python3)"},
            },
            {
                "name": "process_name",
                "ph": "M",
                "ts": start,
                "pid": self.device,
                "tid": 0,
                "args": {"name": "python3"},
            },
            {
                "name": "process_labels",
                "ph": "M",
                "ts": start,
                "pid": self.device,
                "tid": 0,
                "args": {"labels": f"GPU {self.device}"},
            },
        ]
        for stream in sorted(self.free):
            lanes.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "ts": start,
                    "pid": self.device,
                    "tid": stream,
                    "args": {"name": f"stream {stream}"},
                }
            )
        return lanes

    def evidence(self, event: dict[str, Any]) -> str:
        return f"ev:{self.positions[id(event)]}"


# --- the truth ------------------------------------------------------------------------------------


def _truth(ranks: list[_Rank], config: GeneratorConfig, seed: int) -> dict[str, Any]:
    """The planted values, with ``analysis.py``'s default conventions over every step."""
    settings = dataclasses.asdict(config)
    settings["tiny_kernel_us"] = list(config.tiny_kernel_us)
    return {
        "seed": seed,
        "config": settings,
        "steps": list(range(1, config.steps + 1)),
        "ranks": [_rank_truth(rank) for rank in ranks],
        "straggler": _straggler_truth(ranks, config)
        if len(ranks) > 1 and config.allreduce_us > 0
        else None,
    }


def _rank_truth(rank: _Rank) -> dict[str, Any]:
    busy = _union((op.start, op.end) for op in rank.ops)
    syncs = [marker for marker in rank.syncs if marker.step >= 0]
    pageable = [
        op for op in rank.ops if op.name.startswith("Memcpy DtoH") and op.memory == "pageable"
    ]
    stall_idle = sum((m.end - m.start) - _covered(busy, m.start, m.end) for m in rank.loaders)
    return {
        "rank": rank.rank,
        "dominant_kernel": _dominant_kernel(rank),
        "temporal": _temporal(rank),
        "comm_overlap_pct": _overlap(rank),
        "idle_by_stream": _idle_by_stream(rank),
        "launch": {
            "launches": len(rank.ops),
            "shorter_than_launch": sum(
                op.end - op.start < op.call_end - op.call_start for op in rank.ops
            ),
        },
        "syncs": {
            "count": len(syncs),
            "ids": [rank.evidence(marker.event) for marker in syncs],
            "idle_after_us": _us(sum(_idle_gap_at(busy, marker.end) for marker in syncs)),
        },
        "pageable_copies": {
            "count": len(pageable),
            "bytes": sum(op.nbytes for op in pageable),
            "ids": [f"corr:{op.correlation}" for op in pageable],
        },
        "dataloader": {
            "stall_us": _us(sum(m.end - m.start for m in rank.loaders)),
            "gpu_idle_us": _us(stall_idle),
        },
    }


def _dominant_kernel(rank: _Rank) -> dict[str, Any]:
    totals: dict[str, int] = {}
    for op in rank.ops:
        if op.kind in ("compute", "communication"):
            totals[op.name] = totals.get(op.name, 0) + op.end - op.start
    name = max(totals, key=lambda n: (totals[n], n))
    return {"name": name, "share_pct": _pct(totals[name], sum(totals.values()))}


def _step_windows(rank: _Rank) -> list[tuple[int, int]]:
    """Each step's GPU window: from the previous step's last GPU end (the first
    step: its CPU start), or its own first GPU start if earlier, to its last GPU end."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for op in rank.ops:
        first[op.step] = min(first.get(op.step, op.start), op.start)
        last[op.step] = max(last.get(op.step, op.end), op.end)
    windows = []
    previous_end: int | None = None
    for number, cpu_start, cpu_end in rank.steps:
        start = min(
            cpu_start if previous_end is None else previous_end, first.get(number, cpu_start)
        )
        end = max(last.get(number, cpu_end), start)
        windows.append((start, end))
        previous_end = end
    return windows


def _class_intervals(rank: _Rank, kind: str) -> list[tuple[int, int]]:
    return _union((op.start, op.end) for op in rank.ops if op.kind == kind)


def _temporal(rank: _Rank) -> dict[str, float]:
    window = _union(_step_windows(rank))
    compute = _intersect(window, _class_intervals(rank, "compute"))
    communication = _intersect(window, _class_intervals(rank, "communication"))
    memory = _intersect(window, _class_intervals(rank, "memory"))
    total = _length(window)
    compute_time = _length(compute)
    communication_time = _length(communication) - _length(_intersect(communication, compute))
    memory_time = _length(memory) - _length(_intersect(memory, _union(compute + communication)))
    busy = _length(_union(compute + communication + memory))
    return {
        "window_us": _us(total),
        "compute_pct": _pct(compute_time, total),
        "communication_pct": _pct(communication_time, total),
        "memory_pct": _pct(memory_time, total),
        "idle_pct": _pct(total - busy, total),
    }


def _overlap(rank: _Rank) -> float | None:
    window = _union(_step_windows(rank))
    communication = _intersect(window, _class_intervals(rank, "communication"))
    if not communication:
        return None
    both = _intersect(communication, _class_intervals(rank, "compute"))
    return _pct(_length(both), _length(communication))


def _idle_by_stream(rank: _Rank) -> list[dict[str, Any]]:
    """HTA's idle causes: the gap before an op is host wait when its launch
    call began after the previous op on the stream ended; kernel wait when
    shorter than 30 µs otherwise; other for the rest."""
    result = []
    for stream in sorted({op.stream for op in rank.ops}):
        ops = sorted((op for op in rank.ops if op.stream == stream), key=lambda op: op.start)
        causes = {"host_wait_us": 0, "kernel_wait_us": 0, "other_us": 0}
        for previous, current in pairwise(ops):
            gap = max(0, current.start - previous.end)
            if current.call_start > previous.end:
                causes["host_wait_us"] += gap
            elif gap < KERNEL_WAIT_NS:
                causes["kernel_wait_us"] += gap
            else:
                causes["other_us"] += gap
        result.append({"stream": stream, **{key: _us(value) for key, value in causes.items()}})
    return result


def _straggler_truth(ranks: list[_Rank], config: GeneratorConfig) -> dict[str, Any]:
    """Per step, each rank's time in the all-reduce; the straggler waits least.
    ``planted_rank`` is the rank made slow (None: none was, and the rank that
    waits least is the one the ranks' jitter made last)."""
    steps = [number for number, _, _ in ranks[0].steps]
    waiting = {rank.rank: [0] * len(steps) for rank in ranks}
    position = {number: i for i, number in enumerate(steps)}
    for rank in ranks:
        for op in rank.ops:
            if op.kind == "communication" and op.step in position:
                waiting[rank.rank][position[op.step]] += op.end - op.start
    straggler = min(waiting, key=lambda r: (sum(waiting[r]), r))
    others = [r for r in waiting if r != straggler]
    per_step = [
        sum(waiting[r][i] for r in others) / len(others) - waiting[straggler][i]
        for i in range(len(steps))
    ]
    return {
        "rank": straggler,
        "planted_rank": config.straggler_rank if config.straggler_rank >= 0 else None,
        "delay_us": _us(sum(per_step) / len(per_step)),
    }


def _union(intervals: Any) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Both inputs merged (sorted, disjoint)."""
    result = []
    i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            result.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return result


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(end - start for start, end in intervals)


def _idle_gap_at(busy: list[tuple[int, int]], moment: int) -> int:
    """The GPU idle gap that ``moment`` falls in (0 when busy or nothing follows);
    ``busy`` merged."""
    after = bisect_right(busy, (moment, math.inf))
    if after and busy[after - 1][1] > moment:
        return 0
    if after == len(busy):
        return 0
    return busy[after][0] - (busy[after - 1][1] if after else moment)


def _covered(busy: list[tuple[int, int]], start: int, end: int) -> int:
    """How much of [start, end) the merged intervals ``busy`` cover."""
    first = max(bisect_right(busy, (start, math.inf)) - 1, 0)
    total = 0
    for low, high in busy[first:]:
        if low >= end:
            break
        total += max(0, min(high, end) - max(low, start))
    return total


def _us(nanoseconds: float) -> float:
    return round(nanoseconds / 1000, 3)


def _pct(part: float, whole: float) -> float:
    return round(100 * part / whole, 2) if whole else 0.0


# --- files ----------------------------------------------------------------------------------------


def write_trace(trace: dict[str, Any], path: str | Path, gzip: bool = False) -> Path:
    """Write a trace as Kineto lays it out: top-level keys on their own lines
    (``"rank": 0`` with a space, which HTA's rank detection needs), one event
    per line. ``gzip`` compresses it without a name or time in its header, so
    the bytes depend on the trace alone."""
    target = Path(path)
    with target.open("wb") as file:
        if gzip:
            with gzip_module.GzipFile(filename="", fileobj=file, mode="wb", mtime=0) as compressed:
                _write_layout(trace, compressed)
        else:
            _write_layout(trace, file)
    return target


def _write_layout(trace: dict[str, Any], out: Any) -> None:
    out.write(b"{\n")
    for position, (key, value) in enumerate(trace.items()):
        out.write(b",\n" if position else b"")
        if key == "traceEvents":
            out.write(b'  "traceEvents": [\n')
            for i, event in enumerate(value):
                out.write(b",\n" if i else b"")
                out.write(orjson.dumps(event))
            out.write(b"\n  ]")
        else:
            out.write(f"  {json.dumps(key)}: {json.dumps(value)}".encode())
    out.write(b"\n}\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--config", type=Path, help="JSON file of GeneratorConfig settings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for rank<r>.json and truth.json"
    )
    parser.add_argument("--gzip", action="store_true", help="write rank<r>.json.gz")
    args = parser.parse_args(argv)
    settings = json.loads(args.config.read_text()) if args.config else {}
    task = generate(GeneratorConfig.from_mapping(settings), args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = ".json.gz" if args.gzip else ".json"
    for rank, trace in enumerate(task.traces):
        write_trace(trace, args.out / f"rank{rank}{suffix}", gzip=args.gzip)
    (args.out / "truth.json").write_text(json.dumps(task.truth, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
