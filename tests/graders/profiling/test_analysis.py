"""The analyses on small hand-written traces whose figures can be checked by hand.

Times are whole microseconds. The main trace, ``two_steps()``, on stream 7
unless said (GPU intervals, launch call in brackets):

    step 1 (CPU 0-100):  tiny 9-12 [2-8], gemm 20-50 [10-15], relu 50-60 [20-25],
                         gemm 95-125 [55-60] (waits 35 µs on another stream's event)
    step 2 (CPU 100-200): all-reduce 125-155 on stream 20 [110-115], gemm 130-150 [118-123],
                         pageable DtoH copy 165-195 [160-200]

GPU windows: step 1 from 0 (its CPU start) to 125, step 2 from 125 to 195.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from graders.profiling.analysis import (
    as_json,
    comm_comp_overlap,
    dataloader_stalls,
    host_syncs,
    idle_time_by_cause,
    kernel_table,
    launch_delays,
    load_trace,
    memcpy_summary,
    normalize_kernel_name,
    stragglers,
    temporal_breakdown,
)
from graders.profiling.trace import Trace

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
RELU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "ReluFunctor<float>, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::"
    "ReluFunctor<float>, std::array<char*, 2ul>)"
)
TINY = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


class Toy:
    """Writes a Kineto trace event by event; each launch gets a new correlation."""

    def __init__(self, rank: int = 0) -> None:
        self.rank = rank
        self.events: list[dict[str, Any]] = []
        self.correlation = 5000

    def cpu(self, name: str, start: float, end: float, cat: str = "cpu_op") -> dict[str, Any]:
        event = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": start,
            "dur": end - start,
            "args": {},
        }
        self.events.append(event)
        return event

    def step(self, number: int, start: float, end: float) -> None:
        self.cpu(f"ProfilerStep#{number}", start, end, cat="user_annotation")

    def call(self, name: str, start: float, end: float) -> int:
        self.correlation += 1
        self.cpu(name, start, end, cat="cuda_runtime")["args"]["correlation"] = self.correlation
        return self.correlation

    def kernel(
        self,
        name: str,
        call: tuple[float, float],
        gpu: tuple[float, float],
        stream: int = 7,
        **args: Any,
    ) -> None:
        correlation = self.call("cudaLaunchKernel", *call)
        self._gpu("kernel", name, gpu, stream, {"correlation": correlation, **args})

    def copy(
        self, name: str, call: tuple[float, float], gpu: tuple[float, float], nbytes: int
    ) -> None:
        correlation = self.call("cudaMemcpyAsync", *call)
        self._gpu("gpu_memcpy", name, gpu, 7, {"correlation": correlation, "bytes": nbytes})

    def _gpu(
        self, cat: str, name: str, gpu: tuple[float, float], stream: int, args: dict[str, Any]
    ) -> None:
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": gpu[0],
                "dur": gpu[1] - gpu[0],
                "args": {"device": 0, "stream": stream, **args},
            }
        )

    def trace(self) -> Trace:
        document = {
            "distributedInfo": {"rank": self.rank, "world_size": 2},
            "traceEvents": self.events,
        }
        return load_trace(orjson.dumps(document))


def two_steps() -> Trace:
    toy = Toy()
    toy.step(1, 0, 100)
    toy.step(2, 100, 200)
    toy.kernel(TINY, (2, 8), (9, 12))
    toy.kernel(GEMM, (10, 15), (20, 50))
    toy.kernel(RELU, (20, 25), (50, 60))
    toy.kernel(GEMM, (55, 60), (95, 125))
    toy.kernel(NCCL, (110, 115), (125, 155), stream=20)
    toy.kernel(GEMM, (118, 123), (130, 150))
    toy.copy("Memcpy DtoH (Device -> Pageable)", (160, 200), (165, 195), 4096)
    return toy.trace()


def test_temporal_breakdown_divides_the_window():
    # Window 0-195. Compute 3+30+10+30+20 = 93; the all-reduce 125-155 outside
    # compute is 125-130 and 150-155 = 10; the copy 30; idle the other 62.
    result = temporal_breakdown(two_steps())
    assert (result.window_us, result.compute_us, result.communication_us) == (195.0, 93.0, 10.0)
    assert (result.memory_us, result.other_us, result.idle_us) == (30.0, 0.0, 62.0)
    assert (result.compute_pct, result.communication_pct, result.memory_pct, result.idle_pct) == (
        47.69,
        5.13,
        15.38,
        31.79,
    )


def test_temporal_breakdown_of_chosen_steps():
    first = temporal_breakdown(two_steps(), steps=[1])
    assert (first.window_us, first.compute_us, first.idle_us) == (125.0, 73.0, 52.0)
    second = temporal_breakdown(two_steps(), steps=[2])
    # 125-195: compute 130-150, communication 125-130 and 150-155, copy 165-195, idle 155-165.
    assert (second.window_us, second.compute_us, second.communication_us) == (70.0, 20.0, 10.0)
    assert (second.memory_us, second.idle_us, second.idle_pct) == (30.0, 10.0, 14.29)


def test_unknown_steps_and_conventions_are_refused():
    with pytest.raises(ValueError, match="no ProfilerStep#9"):
        temporal_breakdown(two_steps(), steps=[9])
    with pytest.raises(ValueError, match="unknown conventions"):
        temporal_breakdown(two_steps(), conventions="nsight")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fixes the window"):
        temporal_breakdown(two_steps(), steps=[1], conventions="hta")


def test_a_trace_without_steps_is_analysed_whole():
    toy = Toy()
    toy.kernel(GEMM, (0, 5), (10, 40))
    toy.kernel(GEMM, (50, 55), (60, 70))
    trace = toy.trace()
    result = temporal_breakdown(trace)
    assert (result.window_us, result.compute_us, result.idle_us) == (60.0, 40.0, 20.0)
    with pytest.raises(ValueError, match="no ProfilerStep annotations"):
        temporal_breakdown(trace, steps=[1])


def test_comm_comp_overlap_is_the_share_of_communication_under_compute():
    result = comm_comp_overlap(two_steps())
    assert (result.communication_us, result.overlapped_us, result.overlap_pct) == (
        30.0,
        20.0,
        66.67,
    )
    assert comm_comp_overlap(two_steps(), steps=[1]).overlap_pct is None


def test_idle_time_by_cause_follows_hta_definitions():
    # Stream 7: gemm after tiny, gap 8, launched before tiny ended: kernel wait;
    # relu right after: gap 0; gemm at 95, launched at 55 before relu ended at
    # 60, gap 35 >= 30: other; gemm at 130, gap 5: kernel wait; the copy,
    # launched at 160 after the gemm ended at 150: host wait, gap 15.
    [stream7] = idle_time_by_cause(two_steps())
    assert stream7.stream == 7
    assert (stream7.host_wait_us, stream7.kernel_wait_us, stream7.other_us) == (15.0, 13.0, 35.0)
    assert (stream7.idle_us, stream7.host_wait_pct, stream7.kernel_wait_pct, stream7.other_pct) == (
        63.0,
        23.81,
        20.63,
        55.56,
    )
    [second] = idle_time_by_cause(two_steps(), steps=[2])
    assert (second.host_wait_us, second.kernel_wait_us, second.other_us) == (15.0, 5.0, 0.0)
    [strict] = idle_time_by_cause(two_steps(), kernel_wait_us=6.0)
    assert (strict.kernel_wait_us, strict.other_us) == (5.0, 43.0)


def test_launch_delays_and_kernels_shorter_than_their_launch():
    # Delays: 1, 5, 25, 35, 10, 7 and the copy's -35 clipped to 0. The tiny
    # kernel (3 µs, launch 6 µs) and the copy (30 µs, call 40 µs) ran shorter.
    result = launch_delays(two_steps())
    assert (result.launches, result.shorter_than_launch, result.shorter_than_launch_pct) == (
        7,
        2,
        28.57,
    )
    assert (result.below_threshold, result.long_runtime, result.long_delay) == (1, 0, 0)
    assert (result.delay_mean_us, result.delay_p50_us, result.delay_max_us) == (11.857, 7.0, 35.0)
    no_copies = launch_delays(two_steps(), include_memory=False)
    assert (no_copies.launches, no_copies.shorter_than_launch) == (6, 1)
    cut = launch_delays(two_steps(), runtime_cutoff_us=5.5, launch_delay_cutoff_us=20)
    assert (cut.long_runtime, cut.long_delay) == (2, 2)


def test_kernel_table_ranks_kernels_by_total_time():
    table = kernel_table(two_steps())
    assert [
        (row.short_name, row.kind, row.count, row.total_us, row.share_pct) for row in table
    ] == [
        (GEMM, "compute", 3, 80.0, 65.04),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "communication", 1, 30.0, 24.39),
        ("at::native::vectorized_elementwise_kernel", "compute", 1, 10.0, 8.13),
        ("at::native::vectorized_elementwise_kernel", "compute", 1, 3.0, 2.44),
    ]
    assert (table[0].mean_us, table[0].min_us, table[0].max_us) == (26.667, 20.0, 30.0)
    grouped = kernel_table(two_steps(), group_by="short_name")
    assert [(row.name, row.count, row.total_us) for row in grouped][2] == (
        "at::native::vectorized_elementwise_kernel",
        2,
        13.0,
    )
    assert [row.count for row in kernel_table(two_steps(), steps=[2])] == [1, 1]


@pytest.mark.parametrize(
    ("name", "short"),
    [
        (RELU, "at::native::vectorized_elementwise_kernel"),
        (GEMM, GEMM),
        ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
        (
            "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, "
            "false>(float*, float const*, int, int, int, bool const*, int, bool)",
            "softmax_warp_forward",
        ),
        (
            "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_tn_align8>"
            "(cutlass_80_wmma_tensorop_bf16_tn_align8::Params)",
            "cutlass::Kernel2",
        ),
        (NCCL, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"),
        ("Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"),
        ("std::enable_if<true, void>::type at::foo<int>(int)", "at::foo"),
        ("broken<template(", "broken<template("),
    ],
)
def test_normalize_kernel_name(name, short):
    assert normalize_kernel_name(name) == short


def test_mangled_names_are_demangled_and_refused_ones_kept():
    mangled = (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_"
        "15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_"
    )
    assert normalize_kernel_name(mangled) == "at::native::vectorized_elementwise_kernel"
    assert normalize_kernel_name("_ZZZZ_not_a_name") == "_ZZZZ_not_a_name"
    deep = "_Z1fI" + "St6vectorI" * 400 + "i" + "E" * 400 + "Ev"
    assert normalize_kernel_name(deep) == deep, "the demangler's nesting limit: kept as is"


def loader_and_syncs() -> Trace:
    """One step (CPU 0-300): a 50 µs data-loader wait with the GPU idle; a
    gemm 62-162; ``.item()`` copying 4 bytes (162-165) and synchronising until
    172; the next gemm at 200; a pinned HtoD copy; a pageable 8 MiB copy; and
    a ``cudaDeviceSynchronize`` after the step, which is not counted."""
    toy = Toy()
    toy.step(1, 0, 300)
    loader = toy.cpu(
        "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
        0,
        50,
        cat="user_annotation",
    )
    loader["args"]["External id"] = 3
    toy.kernel(GEMM, (55, 60), (62, 162))
    toy.cpu("aten::item", 100, 175)
    toy.cpu("aten::_local_scalar_dense", 101, 174)
    toy.copy("Memcpy DtoH (Device -> Pageable)", (102, 170), (162, 165), 4)
    toy.call("cudaStreamSynchronize", 170, 172)
    toy.kernel(GEMM, (190, 195), (200, 240))
    toy.copy("Memcpy HtoD (Pinned -> Device)", (245, 250), (252, 262), 1 << 20)
    toy.copy("Memcpy DtoH (Device -> Pageable)", (263, 290), (265, 288), 8 << 20)
    toy.call("cudaDeviceSynchronize", 310, 312)
    return toy.trace()


def test_host_syncs_with_the_gpu_idle_that_follows():
    trace = loader_and_syncs()
    result = host_syncs(trace)
    assert (result.count, result.total_us, result.idle_after_us) == (1, 2.0, 35.0)
    [sync] = result.syncs
    assert (sync.name, sync.step, sync.op, sync.idle_after_us) == (
        "cudaStreamSynchronize",
        1,
        "aten::_local_scalar_dense",
        35.0,
    )
    assert sync.ids == ["ev:8", "corr:5003"]
    assert trace.events_for_id(sync.ids[0]) == [8]


def test_memcpy_summary_groups_by_direction_and_host_memory():
    groups = memcpy_summary(loader_and_syncs())
    assert [(g.kind, g.memory, g.count, g.bytes, g.total_us, g.host_us, g.ids) for g in groups] == [
        ("DtoH", "pageable", 2, (8 << 20) + 4, 26.0, 95.0, ["corr:5002", "corr:5006"]),
        ("HtoD", "pinned", 1, 1 << 20, 10.0, 5.0, ["corr:5005"]),
    ]


def test_dataloader_stalls_and_the_gpu_idle_during_them():
    result = dataloader_stalls(loader_and_syncs())
    assert (result.total_us, result.gpu_idle_us) == (50.0, 50.0)
    assert as_json(result.steps) == [
        {"step": 1, "stall_us": 50.0, "gpu_idle_us": 50.0, "ids": ["ev:1"]}
    ]
    toy = Toy()
    toy.step(1, 0, 100)
    toy.kernel(GEMM, (0, 2), (5, 45))
    toy.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 10, 60)
    assert dataloader_stalls(toy.trace()).gpu_idle_us == 15.0  # the gemm covers 10-45


def ranks_with_collectives(times: list[list[float]]) -> list[Trace]:
    """One trace per rank: two steps of 500 and 520 µs, each with a gemm and
    an all-reduce of the given length."""
    traces = []
    for rank, (first, second) in enumerate(times):
        toy = Toy(rank)
        for number, (start, end, waiting) in enumerate(((0, 500, first), (500, 1020, second)), 1):
            toy.step(number, start, end)
            toy.kernel(GEMM, (start + 1, start + 2), (start + 5, start + 305))
            toy.kernel(
                NCCL, (start + 3, start + 4), (start + 305, start + 305 + waiting), stream=20
            )
        traces.append(toy.trace())
    return traces


def test_the_straggler_is_the_rank_that_waits_least():
    result = stragglers(ranks_with_collectives([[100, 110], [20, 30], [60, 70]]))
    assert (result.straggler_rank, result.delay_us) == (1, 60.0)
    assert [
        (r.rank, r.steps, r.step_time_us, r.compute_us, r.communication_us) for r in result.ranks
    ] == [
        (0, 2, 510.0, 300.0, 105.0),
        (1, 2, 510.0, 300.0, 25.0),
        (2, 2, 510.0, 300.0, 65.0),
    ]
    assert stragglers(ranks_with_collectives([[100, 110], [20, 30]]), steps=[2]).delay_us == 80.0


def test_stragglers_need_distinct_ranks_and_collectives():
    two = ranks_with_collectives([[100, 110], [20, 30]])
    with pytest.raises(ValueError, match="same rank"):
        stragglers([two[0], two[0]])
    assert stragglers(two[:1]).straggler_rank is None


def test_hta_conventions_drop_the_last_step():
    # HTA keeps what step 1 launched: tiny, gemm, relu, gemm, spanning 9-125.
    result = temporal_breakdown(two_steps(), conventions="hta")
    assert (result.window_us, result.compute_us, result.idle_us, result.idle_pct) == (
        116.0,
        73.0,
        43.0,
        37.07,
    )
    assert comm_comp_overlap(two_steps(), conventions="hta").overlap_pct is None
    [stream7] = idle_time_by_cause(two_steps(), conventions="hta")
    assert (stream7.host_wait_us, stream7.kernel_wait_us, stream7.other_us) == (0.0, 8.0, 35.0)
    assert launch_delays(two_steps(), conventions="hta").launches == 4
    assert sum(row.count for row in kernel_table(two_steps(), conventions="hta")) == 4


def test_hta_conventions_round_fractional_timestamps():
    # With a fractional timestamp in the file, starts round up and ends down.
    toy = Toy()
    toy.kernel(GEMM, (0, 1), (10.4, 20.6))  # 11-20
    toy.kernel(GEMM, (2, 3), (30.5, 40.0))  # 31-40
    hta = temporal_breakdown(toy.trace(), conventions="hta")
    assert (hta.window_us, hta.compute_us, hta.idle_us) == (29.0, 18.0, 11.0)
    plain = temporal_breakdown(toy.trace())
    assert (plain.window_us, plain.compute_us) == (29.6, 19.7)


def test_hta_conventions_classify_kernels_by_name():
    toy = Toy()
    toy.kernel("all_gather_kernel", (0, 1), (10, 20), **{"Collective name": "allgather"})
    toy.kernel("fused_Memcpy_kernel", (2, 3), (20, 30))
    hta = temporal_breakdown(toy.trace(), conventions="hta")
    assert (hta.compute_us, hta.communication_us, hta.other_us) == (10.0, 0.0, 10.0)
    plain = temporal_breakdown(toy.trace())
    assert (plain.compute_us, plain.communication_us, plain.other_us) == (10.0, 10.0, 0.0)


def test_results_become_json():
    assert as_json(temporal_breakdown(two_steps()))["idle_pct"] == 31.79
    assert orjson.loads(orjson.dumps(as_json(idle_time_by_cause(two_steps()))))[0]["stream"] == 7
    assert as_json(3) == 3
