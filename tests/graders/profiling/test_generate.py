"""The generator: deterministic traces whose planted bottlenecks the analyses find.

Each scenario plants bottlenecks; every analysis must reproduce the truth the
generator computed from its own timeline: counts and evidence ids exactly,
microseconds within 0.01 µs, percentages within 0.1 percentage point.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import orjson
import pytest

from graders.profiling import analysis
from graders.profiling.generate import (
    DOMINANT_GEMM,
    GeneratorConfig,
    generate,
    main,
    write_trace,
)
from graders.profiling.trace import Trace

PCT = 0.1
US = 0.01

SCENARIOS: dict[str, dict[str, Any]] = {
    "launch_bound": {"steps": 3, "layers": 2, "tiny_kernels": 200},
    "host_syncs": {"steps": 3, "layers": 4, "host_syncs": 2, "sync_outside_steps": True},
    "pageable_copies": {"steps": 3, "pageable_copies": 2, "pinned_copy": True},
    "allreduce_after_compute": {"steps": 3, "allreduce_us": 500.0},
    "overlapped_allreduce": {"steps": 3, "ranks": 2, "allreduce_us": 600.0, "overlap_layers": 2},
    "straggler": {
        "steps": 3,
        "ranks": 3,
        "allreduce_us": 300.0,
        "straggler_rank": 2,
        "straggler_us": 400.0,
    },
    "dataloader_stall": {"steps": 3, "dataloader_stall_us": 3000.0, "second_gemm": True},
    "everything": {
        "steps": 3,
        "ranks": 2,
        "tiny_kernels": 50,
        "host_syncs": 1,
        "pageable_copies": 1,
        "allreduce_us": 300.0,
        "dataloader_stall_us": 300.0,
        "straggler_rank": 0,
        "straggler_us": 200.0,
        "second_gemm": True,
        "pinned_copy": True,
        "sync_outside_steps": True,
    },
}


def load_all(config: dict[str, Any], seed: int = 11) -> tuple[list[Trace], dict[str, Any]]:
    task = generate(config, seed)
    traces = [analysis.load_trace(orjson.dumps(trace)) for trace in task.traces]
    return traces, task.truth


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def scenario(request) -> tuple[str, list[Trace], dict[str, Any]]:
    traces, truth = load_all(SCENARIOS[request.param])
    return request.param, traces, truth


def test_the_same_seed_gives_the_same_bytes():
    config = SCENARIOS["everything"]
    first, again, other = generate(config, 3), generate(config, 3), generate(config, 4)

    def dump(task):
        return orjson.dumps(
            {"traces": task.traces, "truth": task.truth}, option=orjson.OPT_SORT_KEYS
        )

    assert dump(first) == dump(again)
    assert dump(first) != dump(other)


def test_written_files_are_the_same_bytes_and_kineto_shaped(tmp_path):
    task = generate(SCENARIOS["straggler"], 3)
    one = write_trace(task.traces[1], tmp_path / "a.json.gz", gzip=True).read_bytes()
    two = write_trace(
        generate(SCENARIOS["straggler"], 3).traces[1], tmp_path / "b.json.gz", gzip=True
    ).read_bytes()
    assert one == two
    text = gzip.decompress(one).decode()
    assert (
        '"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 3}' in text
    )  # HTA reads the rank so
    assert orjson.loads(text) == task.traces[1]


def test_the_command_line_writes_ranks_and_truth(tmp_path):
    (tmp_path / "cfg.json").write_text(json.dumps({"ranks": 2, "allreduce_us": 100, "steps": 2}))
    main(
        [
            "--config",
            str(tmp_path / "cfg.json"),
            "--seed",
            "3",
            "--out",
            str(tmp_path / "out"),
            "--gzip",
        ]
    )
    names = sorted(path.name for path in (tmp_path / "out").iterdir())
    assert names == ["rank0.json.gz", "rank1.json.gz", "truth.json"]
    trace = analysis.load_trace((tmp_path / "out" / "rank1.json.gz").read_bytes())
    assert (trace.rank, trace.world_size, [s.number for s in trace.steps]) == (1, 2, [1, 2])
    truth = json.loads((tmp_path / "out" / "truth.json").read_text())
    assert truth == json.loads(
        json.dumps(generate({"ranks": 2, "allreduce_us": 100, "steps": 2}, 3).truth)
    )


def test_kineto_fields_are_present():
    task = generate(SCENARIOS["everything"], 1)
    trace = task.traces[0]
    assert trace["distributedInfo"] == {"backend": "nccl", "rank": 0, "world_size": 2}
    assert trace["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3"
    events = trace["traceEvents"]
    kernel = next(e for e in events if e.get("cat") == "kernel")
    assert {
        "correlation",
        "stream",
        "device",
        "grid",
        "block",
        "registers per thread",
        "shared memory",
    } <= set(kernel["args"])
    assert kernel["pid"] == 0 and kernel["tid"] == kernel["args"]["stream"]
    launch = next(
        e
        for e in events
        if e.get("args", {}).get("correlation") == kernel["args"]["correlation"]
        and e["cat"] == "cuda_runtime"
    )
    assert launch["name"] == "cudaLaunchKernel"
    assert {e["ph"] for e in events if e.get("id") == kernel["args"]["correlation"]} == {"s", "f"}
    nccl = next(e for e in events if e["name"].startswith("ncclDevKernel"))
    assert nccl["args"]["Collective name"] == "allreduce"
    assert {e["name"] for e in events if e.get("cat") == "gpu_memcpy"} == {
        "Memcpy DtoH (Device -> Pageable)",
        "Memcpy HtoD (Pinned -> Device)",
    }


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"colour": "red"}, "unknown generator settings: colour"),
        ({"straggler_rank": 0, "ranks": 2}, "needs an all-reduce"),
        ({"straggler_rank": 2, "ranks": 2, "allreduce_us": 10}, "one of the ranks"),
        ({"overlap_layers": 9}, "overlap_layers"),
        ({"steps": 0}, "at least 1"),
    ],
)
def test_bad_configs_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        GeneratorConfig.from_mapping(settings)


def test_analyses_reproduce_the_truth(scenario):
    _, traces, truth = scenario
    for trace, expected in zip(traces, truth["ranks"], strict=True):
        temporal = analysis.temporal_breakdown(trace)
        assert temporal.window_us == pytest.approx(expected["temporal"]["window_us"], abs=US)
        for key in ("compute_pct", "communication_pct", "memory_pct", "idle_pct"):
            assert getattr(temporal, key) == pytest.approx(expected["temporal"][key], abs=PCT), key
        overlap = analysis.comm_comp_overlap(trace).overlap_pct
        if expected["comm_overlap_pct"] is None:
            assert overlap is None
        else:
            assert overlap == pytest.approx(expected["comm_overlap_pct"], abs=PCT)
        top = analysis.kernel_table(trace)[0]
        assert top.name == expected["dominant_kernel"]["name"]
        assert top.share_pct == pytest.approx(expected["dominant_kernel"]["share_pct"], abs=PCT)
        launches = analysis.launch_delays(trace)
        assert (launches.launches, launches.shorter_than_launch) == (
            expected["launch"]["launches"],
            expected["launch"]["shorter_than_launch"],
        )


def test_idle_causes_reproduce_the_truth(scenario):
    _, traces, truth = scenario
    for trace, expected in zip(traces, truth["ranks"], strict=True):
        found = {row.stream: row for row in analysis.idle_time_by_cause(trace)}
        assert sorted(found) == [row["stream"] for row in expected["idle_by_stream"]]
        for row in expected["idle_by_stream"]:
            for key in ("host_wait_us", "kernel_wait_us", "other_us"):
                assert getattr(found[row["stream"]], key) == pytest.approx(row[key], abs=US), key


def test_syncs_copies_and_stalls_reproduce_the_truth(scenario):
    _, traces, truth = scenario
    for trace, expected in zip(traces, truth["ranks"], strict=True):
        syncs = analysis.host_syncs(trace)
        assert syncs.count == expected["syncs"]["count"]
        assert [sync.ids[0] for sync in syncs.syncs] == expected["syncs"]["ids"]
        assert syncs.idle_after_us == pytest.approx(expected["syncs"]["idle_after_us"], abs=US)
        pageable = [
            g for g in analysis.memcpy_summary(trace) if (g.kind, g.memory) == ("DtoH", "pageable")
        ]
        found = (pageable[0].count, pageable[0].bytes, pageable[0].ids) if pageable else (0, 0, [])
        assert found == tuple(expected["pageable_copies"][key] for key in ("count", "bytes", "ids"))
        stalls = analysis.dataloader_stalls(trace)
        assert stalls.total_us == pytest.approx(expected["dataloader"]["stall_us"], abs=US)
        assert stalls.gpu_idle_us == pytest.approx(expected["dataloader"]["gpu_idle_us"], abs=US)


def test_the_straggler_is_found(scenario):
    _, traces, truth = scenario
    result = analysis.stragglers(traces)
    if truth["straggler"] is None:
        assert result.straggler_rank is None
        return
    assert result.straggler_rank == truth["straggler"]["rank"]
    assert result.delay_us == pytest.approx(truth["straggler"]["delay_us"], abs=US)
    if truth["straggler"]["planted_rank"] is not None:
        assert result.straggler_rank == truth["straggler"]["planted_rank"]


def test_each_planted_bottleneck_is_visible():
    """The truth shows what was planted, so a task built on it asks about something real."""
    truth = {name: load_all(config)[1] for name, config in SCENARIOS.items()}
    flood = truth["launch_bound"]["ranks"][0]
    [stream] = flood["idle_by_stream"]
    assert stream["host_wait_us"] > 0.8 * (
        stream["host_wait_us"] + stream["kernel_wait_us"] + stream["other_us"]
    )
    assert flood["launch"]["shorter_than_launch"] >= 3 * 200
    assert flood["temporal"]["idle_pct"] > 30
    syncs = truth["host_syncs"]["ranks"][0]["syncs"]
    assert syncs["count"] == 3 * 2  # the cudaDeviceSynchronize before step 1 is not in a step
    assert syncs["idle_after_us"] > 6 * 40  # each .item() is followed by 40 µs of host work
    copies = truth["pageable_copies"]["ranks"][0]["pageable_copies"]
    assert (copies["count"], copies["bytes"]) == (3 * 2, 3 * 2 * (8 << 20))
    assert truth["allreduce_after_compute"]["ranks"][0]["comm_overlap_pct"] == 0.0
    assert all(rank["comm_overlap_pct"] > 30 for rank in truth["overlapped_allreduce"]["ranks"])
    assert truth["straggler"]["straggler"]["delay_us"] == pytest.approx(400, rel=0.1)
    stall = truth["dataloader_stall"]["ranks"][0]["dataloader"]
    assert stall["stall_us"] == pytest.approx(3 * 3000, rel=0.05)
    assert stall["gpu_idle_us"] > 0.5 * stall["stall_us"]
    dominant = truth["dataloader_stall"]["ranks"][0]["dominant_kernel"]
    assert dominant["name"] == DOMINANT_GEMM and dominant["share_pct"] > 50
