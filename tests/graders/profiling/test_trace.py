"""Loading traces: Kineto and JAX JSON (plain and gzip), Nsight SQLite, malformed
input, evidence ids."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from graders.profiling import trace as trace_module
from graders.profiling.generate import generate, write_trace
from graders.profiling.trace import (
    CallKind,
    CopyKind,
    EventKind,
    HostMemory,
    TraceError,
    load_nsys_sqlite,
    load_trace,
)

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def kineto_events() -> list[dict[str, Any]]:
    """A step with one operator, its launch and kernel, a pageable copy, an
    all-reduce, flow and metadata events; positions are the evidence ids."""
    return [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 0, "args": {"name": "GPU 0"}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": 0,
            "tid": 7,
            "ts": 0,
            "args": {"name": "stream 7"},
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#4",
            "pid": 10,
            "tid": 10,
            "ts": 100.0,
            "dur": 500.0,
            "args": {"External id": 1},
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "pid": 10,
            "tid": 10,
            "ts": 110.0,
            "dur": 20.0,
            "args": {"External id": 5},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 10,
            "tid": 10,
            "ts": 115.0,
            "dur": 5.0,
            "args": {"External id": 5, "cbid": 211, "correlation": 900},
        },
        {"ph": "s", "id": 900, "pid": 10, "tid": 10, "ts": 115.0, "cat": "ac2g", "name": "ac2g"},
        {
            "ph": "X",
            "cat": "kernel",
            "name": GEMM,
            "pid": 0,
            "tid": 7,
            "ts": 125.5,
            "dur": 300.25,
            "args": {
                "External id": 5,
                "device": 0,
                "stream": 7,
                "correlation": 900,
                "grid": [132, 1, 1],
            },
        },
        {
            "ph": "f",
            "id": 900,
            "pid": 0,
            "tid": 7,
            "ts": 125.5,
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMemcpyAsync",
            "pid": 10,
            "tid": 10,
            "ts": 140.0,
            "dur": 300.0,
            "args": {"correlation": 901},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy DtoH (Device -> Pageable)",
            "pid": 0,
            "tid": 7,
            "ts": 430.0,
            "dur": 8.0,
            "args": {"device": 0, "stream": 7, "correlation": 901, "bytes": 4096},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaStreamSynchronize",
            "pid": 10,
            "tid": 10,
            "ts": 445.0,
            "dur": 3.0,
            "args": {"correlation": 902},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "all_reduce_kernel",
            "pid": 0,
            "tid": 20,
            "ts": 450.0,
            "dur": 40.0,
            "args": {"stream": 20, "Collective name": "allreduce"},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": NCCL,
            "pid": 0,
            "tid": 20,
            "ts": 500.0,
            "dur": 40.0,
            "args": {"stream": 20},
        },
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "mark",
            "pid": 10,
            "tid": 10,
            "ts": 550.0,
            "s": "t",
        },
    ]


def kineto_document(events: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
        "traceEvents": kineto_events() if events is None else events,
        "traceName": "rank3.json",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        **extra,
    }


def columns(trace: Any) -> dict[str, np.ndarray]:
    fields = (
        "index",
        "ts_us",
        "dur_us",
        "kind",
        "name_id",
        "pid",
        "tid",
        "stream",
        "correlation",
        "external_id",
        "nbytes",
    )
    return {field: getattr(trace, field) for field in fields}


def test_plain_and_gzip_json_load_the_same_events():
    text = orjson.dumps(kineto_document())
    plain, compressed = load_trace(text), load_trace(gzip.compress(text))
    for field, values in columns(plain).items():
        assert np.array_equal(values, columns(compressed)[field]), field
    assert plain.names == compressed.names


def test_kineto_header_gives_source_rank_and_metadata():
    trace = load_trace(orjson.dumps(kineto_document()))
    assert (trace.source, trace.rank, trace.world_size) == ("kineto", 3, 8)
    assert trace.metadata["baseTimeNanoseconds"] == 1_700_000_000_000_000_000
    assert trace.metadata["traceName"] == "rank3.json"
    assert "traceEvents" not in trace.metadata
    assert trace.lane_name(0, 7) == "GPU 0 / stream 7"


def test_events_are_classified_from_their_category_and_name():
    trace = load_trace(orjson.dumps(kineto_document()))
    kinds = {trace.label(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert kinds["ProfilerStep#4"] == EventKind.USER_ANNOTATION
    assert kinds["aten::mm"] == EventKind.CPU_OP
    assert kinds[GEMM] == EventKind.KERNEL
    assert kinds["all_reduce_kernel"] == EventKind.COMM_KERNEL  # by its Collective name
    assert kinds[NCCL] == EventKind.COMM_KERNEL  # by its name
    copy = trace.names.index("Memcpy DtoH (Device -> Pageable)")
    row = int(np.flatnonzero(trace.name_id == copy)[0])
    assert (trace.copy_kind[row], trace.host_memory[row], trace.nbytes[row]) == (
        CopyKind.DTOH,
        HostMemory.PAGEABLE,
        4096,
    )
    calls = {trace.label(row): CallKind(int(trace.call_kind[row])) for row in range(len(trace))}
    assert calls["cudaLaunchKernel"] == calls["cudaMemcpyAsync"] == CallKind.LAUNCH
    assert calls["cudaStreamSynchronize"] == CallKind.SYNC


def test_copy_names_give_direction_and_host_memory():
    assert trace_module._parse_copy_name("Memcpy HtoD (Pinned -> Device)") == (
        CopyKind.HTOD,
        HostMemory.PINNED,
    )
    assert trace_module._parse_copy_name("Memcpy DtoD (Device -> Device)") == (
        CopyKind.DTOD,
        HostMemory.DEVICE,
    )
    assert trace_module._parse_copy_name("MemcpyD2H") == (CopyKind.DTOH, HostMemory.UNKNOWN)
    assert trace_module._parse_copy_name("Memset (Device)") == (
        CopyKind.UNKNOWN,
        HostMemory.UNKNOWN,
    )


def test_only_complete_events_are_rows_and_keep_their_position():
    trace = load_trace(orjson.dumps(kineto_document()))
    assert trace.event_count == 14
    assert len(trace) == 9
    assert trace.index.tolist() == [2, 3, 4, 6, 8, 9, 10, 11, 12]
    assert trace.ts_us[trace.index.tolist().index(6)] == 125.5


def test_an_event_is_shown_as_written_with_its_args():
    trace = load_trace(orjson.dumps(kineto_document()))
    assert trace.event(6) == kineto_events()[6]
    assert trace.event(5)["ph"] == "s"
    with pytest.raises(IndexError):
        trace.event(14)


def test_a_kernel_belongs_to_the_step_of_its_launch():
    events = kineto_events()
    events[6]["ts"] = 700.0  # runs after ProfilerStep#4 has ended on the CPU
    trace = load_trace(orjson.dumps(kineto_document(events)))
    kernel = int(trace.rows_at([6])[0])
    unlaunched = int(trace.rows_at([12])[0])  # no launch call: by its own start, in the step
    assert [step.number for step in trace.steps] == [4]
    assert trace.row_step[kernel] == 4
    assert trace.row_step[unlaunched] == 4
    assert trace.launch_row[kernel] == int(trace.rows_at([4])[0])


def test_evidence_ids_name_events_by_position_correlation_and_external_id():
    trace = load_trace(orjson.dumps(kineto_document()))
    assert trace.events_for_id("ev:13") == [13]
    assert trace.has_event_id("ev:5")  # a flow event is still a position in traceEvents
    assert not trace.has_event_id("ev:14")
    assert trace.events_for_id("corr:900") == [4, 6]  # the launch and its kernel
    assert trace.events_for_id("ext:5") == [3, 4, 6]
    assert not trace.has_event_id("corr:999")
    assert not trace.has_event_id("rank0/ev:1")
    assert not trace.has_event_id("ev:-1")
    assert trace.evidence_ids(int(trace.rows_at([6])[0])) == ["ev:6", "corr:900", "ext:5"]


def test_integral_timestamps_are_recorded():
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}]
    assert load_trace(orjson.dumps(kineto_document(events))).integral_timestamps
    events[0]["ts"] = 10.5
    assert not load_trace(orjson.dumps(kineto_document(events))).integral_timestamps


def test_string_process_and_thread_ids_are_kept_as_labels():
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "op",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 1,
            "dur": 2,
        }
    ]
    trace = load_trace(orjson.dumps(kineto_document(events)))
    assert trace.lane_name(int(trace.pid[0]), int(trace.tid[0])) == "Spans / PyTorch Profiler"


def test_slicing_a_big_array_gives_the_same_trace(monkeypatch, tmp_path):
    task = generate({"steps": 2, "layers": 2, "tiny_kernels": 10, "host_syncs": 1}, seed=5)
    data = write_trace(task.traces[0], tmp_path / "rank0.json").read_bytes()
    whole = load_trace(data)
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 1000)
    sliced = load_trace(data)
    assert len(sliced.raw.chunks) > 20
    for field, values in columns(whole).items():
        assert np.array_equal(values, columns(sliced)[field]), field
    assert sliced.metadata == whole.metadata
    for position in (0, 17, sliced.event_count - 1):
        assert sliced.event(position) == task.traces[0]["traceEvents"][position]


def test_a_cut_inside_a_string_is_passed_over(monkeypatch):
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": 'tricky"},{"name',
            "pid": 1,
            "tid": 1,
            "ts": i,
            "dur": 1,
        }
        for i in range(200)
    ]
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 150)
    trace = load_trace(orjson.dumps(kineto_document(events)))
    assert len(trace) == 200
    assert trace.names == ['tricky"},{"name']
    assert trace.ts_us.tolist() == list(range(200))


def test_names_beyond_ascii_load_in_every_slice(monkeypatch):
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"schritt_über_数据_{i % 3}",
            "pid": 1,
            "tid": 1,
            "ts": i,
            "dur": 1,
        }
        for i in range(60)
    ]
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 500)
    trace = load_trace(orjson.dumps(kineto_document(events)))
    assert len(trace.raw.chunks) > 3
    assert [trace.label(row) for row in range(3)] == [
        "schritt_über_数据_0",
        "schritt_über_数据_1",
        "schritt_über_数据_2",
    ]
    assert trace.event(59)["name"] == "schritt_über_数据_2"
    assert trace.metadata["traceName"] == "rank3.json"


def test_keys_after_the_events_are_kept_even_with_brackets(monkeypatch):
    devices = [{"id": 0, "name": "a"}, {"id": 1, "name": "b]"}]
    document = {
        "traceEvents": kineto_events(),
        "deviceProperties": devices,
        "displayTimeUnit": "ms",
    }
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 100)
    trace = load_trace(orjson.dumps(document))
    assert trace.metadata == {"deviceProperties": devices, "displayTimeUnit": "ms"}
    assert trace.event_count == 14


def test_a_nested_trace_events_key_is_not_taken_for_the_top_level_one():
    document = {"metadata": {"traceEvents": [{"ph": "X"}]}, **kineto_document()}
    trace = load_trace(orjson.dumps(document))
    assert trace.event_count == 14
    assert trace.metadata["metadata"] == {"traceEvents": [{"ph": "X"}]}
    assert repr(trace) == "Trace(kineto, '', rank 3/8, 14 events, 9 complete)"


def test_the_bare_array_form_loads():
    trace = load_trace(orjson.dumps(kineto_events()))
    assert (trace.source, trace.event_count, trace.metadata) == ("kineto", 14, {})


def test_jax_lanes_decide_what_an_event_is():
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": 1,
            "tid": 3,
            "args": {"name": "Stream #13(Compute)"},
        },
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 4, "args": {"name": "XLA Ops"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 10, "dur": 5, "name": "fusion_3"},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 20, "dur": 5, "name": "MemcpyD2H"},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 30, "dur": 5, "name": "all-reduce.1"},
        {"ph": "X", "pid": 1, "tid": 4, "ts": 10, "dur": 25, "name": "fusion.3"},
        {"ph": "X", "pid": 2, "tid": 9, "ts": 0, "dur": 40, "name": "$train.py:12 step"},
        {"ph": "X", "pid": 2, "tid": 9, "ts": 2, "dur": 30, "name": "PjitFunction(step)"},
    ]
    document = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}
    trace = load_trace(gzip.compress(orjson.dumps(document)))
    kinds = [EventKind(int(kind)) for kind in trace.kind]
    assert trace.source == "jax"
    assert kinds == [
        EventKind.KERNEL,
        EventKind.MEMCPY,
        EventKind.COMM_KERNEL,
        EventKind.GPU_ANNOTATION,
        EventKind.PYTHON_FUNCTION,
        EventKind.CPU_OP,
    ]
    assert trace.stream.tolist() == [13, 13, 13, -1, -1, -1]
    assert trace.lane_name(1, 3) == "/device:GPU:0 / Stream #13(Compute)"
    assert trace.steps == []


NSYS_PID, NSYS_TID = 1234, 1240


def write_nsys(path: Path) -> None:
    """The tables ``nsys export --type sqlite`` writes, with the columns read;
    ``globalTid`` packs the process id above bit 24 and the thread id below."""
    tid = (1 << 56) | (NSYS_PID << 24) | NSYS_TID
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
            correlationId INT, shortName INT, demangledName INT, gridX INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT,
            globalTid INT, correlationId INT, nameId INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT, streamId INT,
            correlationId INT, bytes INT, copyKind INT, srcKind INT, dstKind INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INT, end INT, deviceId INT, streamId INT,
            correlationId INT, bytes INT, value INT);
        CREATE TABLE NVTX_EVENTS (start INT, end INT, text TEXT, textId INT, globalTid INT,
            eventType INT);
        INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'void gemm<float>(float*)'),
            (3, 'cudaLaunchKernel_v7000'), (4, 'cudaMemcpyAsync_v3020'),
            (5, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'), (6, 'cudaStreamSynchronize_v3020');
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
            (2000000, 2300000, 0, 7, 11, 1, 2, 132), (2400000, 2500000, 0, 13, 12, 5, 5, 1);
        INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2300000, 2310000, 0, 7, 13, 4096, 2, 3, 1);
        INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (2310000, 2311000, 0, 7, 15, 64, 0);
        """
    )
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?)",
        [
            (1000000, 1005000, tid, 11, 3),
            (1100000, 1400000, tid, 13, 4),
            (1500000, 1501000, tid, 14, 6),
        ],
    )
    db.executemany(
        "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, NULL, ?, ?)",
        [(900000, 3000000, "ProfilerStep#2", tid, 59), (950000, None, "a mark", tid, 34)],
    )
    db.commit()
    db.close()


def test_nsight_sqlite_export_loads(tmp_path):
    write_nsys(tmp_path / "report.sqlite")
    trace = load_nsys_sqlite(str(tmp_path / "report.sqlite"))
    labels = [trace.label(row) for row in range(len(trace))]
    assert trace.source == "nsys"
    assert labels == [
        "void gemm<float>(float*)",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "Memcpy DtoH (Device -> Pageable)",
        "Memset (Device)",
        "cudaLaunchKernel",
        "cudaMemcpyAsync",
        "cudaStreamSynchronize",
        "ProfilerStep#2",
    ]
    assert [EventKind(int(kind)).name for kind in trace.kind] == [
        "KERNEL",
        "COMM_KERNEL",
        "MEMCPY",
        "MEMSET",
        "CUDA_RUNTIME",
        "CUDA_RUNTIME",
        "CUDA_RUNTIME",
        "USER_ANNOTATION",
    ]
    assert trace.ts_us[0] == 2000.0 and trace.dur_us[0] == 300.0
    assert (trace.pid[0], trace.tid[0], trace.stream[0]) == (0, 7, 7)
    assert (trace.pid[4], trace.tid[4]) == (NSYS_PID, NSYS_TID)
    assert trace.events_for_id("corr:11") == [0, 4]
    assert trace.host_memory[2] == HostMemory.PAGEABLE and trace.nbytes[2] == 4096
    assert [step.number for step in trace.steps] == [2]
    assert trace.row_step[0] == 2
    assert trace.event(0)["args"] == {"stream": 7, "device": 0, "correlation": 11}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not JSON"),
        (b"\x1f\x8b\x08\x00garbage", "not a readable gzip file"),
        (b'{"schemaVersion": 1}', "not a Chrome trace: no traceEvents list"),
        (b'{"traceEvents": {"a": 1}}', "not a Chrome trace: no traceEvents list"),
        (b'{"traceEvents": [1]}', "traceEvents[0]: not an object"),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "ts": "5", "dur": 1}]}',
            "traceEvents[0].ts: not a number",
        ),
        (
            b'{"traceEvents": [{"ph": "M"}, {"ph": "X", "name": "a", "ts": 5}]}',
            "traceEvents[1].dur: missing",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 5, "dur": -1}]}',
            "traceEvents[0].dur: negative",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": 7, "ts": 5, "dur": 1}]}',
            "traceEvents[0].name: not a string",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 5, "dur": 1, "args": [1]}]}',
            "traceEvents[0].args: not an object",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 5, "dur": 1, '
            b'"args": {"correlation": "x"}}]}',
            "traceEvents[0].args.correlation: not an integer",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 5, "dur": 1, "pid": 1.5}]}',
            "traceEvents[0].pid: not an integer or string",
        ),
        (b'{"distributedInfo": {"rank": "0"}, "traceEvents": []}', "distributedInfo.rank"),
    ],
)
def test_malformed_input_is_refused_with_the_field_named(data, message):
    with pytest.raises(TraceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_trace(data)


def test_a_bad_event_is_found_in_a_later_slice(monkeypatch):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(100)
    ]
    events[77]["dur"] = None
    monkeypatch.setattr(trace_module, "CHUNK_BYTES", 200)
    with pytest.raises(TraceError, match=r"traceEvents\[77\]\.dur: missing"):
        load_trace(orjson.dumps(kineto_document(events)))


def test_too_many_events_are_refused():
    data = orjson.dumps(kineto_document())
    assert load_trace(data, max_events=14).event_count == 14
    with pytest.raises(TraceError, match="more than 13 events"):
        load_trace(data, max_events=13)
    with pytest.raises(TraceError, match="more than 13 events"):
        load_trace(orjson.dumps(kineto_events()), max_events=13)


def test_nsight_limits_and_bad_files_are_refused(tmp_path):
    write_nsys(tmp_path / "report.sqlite")
    with pytest.raises(TraceError, match="more than 3 events"):
        load_nsys_sqlite(str(tmp_path / "report.sqlite"), max_events=3)
    (tmp_path / "notes.sqlite").write_text("not a database at all, just text" * 100)
    with pytest.raises(TraceError, match="not an Nsight Systems SQLite export"):
        load_nsys_sqlite(str(tmp_path / "notes.sqlite"))
    sqlite3.connect(tmp_path / "empty.sqlite").close()
    with pytest.raises(TraceError, match="no StringIds table"):
        load_nsys_sqlite(str(tmp_path / "empty.sqlite"))
