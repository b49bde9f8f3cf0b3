"""Re-profiling a changed program in the real bubblewrap sandbox.

The programs live in ``programs/`` (see its README): a host-sync pair, a
launches pair, and "fixes" that return wrong results, tamper with the
profiler, crash or hang. Every grading here starts two real sandboxes, so
the gradings that are worth a module's time are shared by fixtures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graders.profiling.reprofile import (
    MAX_TRACE_BYTES,
    SCALAR_READS,
    ProgramSpec,
    Reprofile,
    TraceError,
    TraceTooLarge,
    analyse_trace,
    reprofile,
)
from sandboxes import get_backend
from sandboxes.base import RunRequest, Sandbox, SandboxProcess

PROGRAMS = Path(__file__).resolve().parent / "programs"
TOLERANCES = {"float32": (1e-5, 1e-5), "float64": (1e-6, 1e-6)}


def _spec(signal: str = "syncs", **overrides: Any) -> ProgramSpec:
    settings: dict[str, Any] = {
        "module": "train.py",
        "entry": "step",
        "inputs_module": "inputs.py",
        "steps": 3,
        "warmup": 1,
        "signal": signal,
        "repeats": 3,
        "tolerances": TOLERANCES,
    }
    return ProgramSpec(**{**settings, **overrides})


def _program(path: str) -> dict[str, str]:
    """A program file of ``programs/``, placed as the task's ``train.py``."""
    return {"train.py": (PROGRAMS / path).read_text()}


def _inputs(folder: str) -> dict[str, str]:
    return {"inputs.py": (PROGRAMS / folder / "inputs.py").read_text()}


class RecordingSandbox(Sandbox):
    """The real bwrap backend, remembering every request it was asked to start."""

    name = "recording"

    def __init__(self) -> None:
        self.inner = get_backend("bwrap")
        self.requests: list[RunRequest] = []

    def check(self) -> None:
        self.inner.check()

    def start(self, request: RunRequest) -> SandboxProcess:
        self.requests.append(request)
        return self.inner.start(request)


def _host_sync(fix: str, **spec: Any) -> Reprofile:
    return reprofile(
        _spec(**spec),
        _program("host_sync/train.py"),
        _program(fix),
        _inputs("host_sync"),
        get_backend("bwrap"),
    )


@pytest.fixture(scope="module")
def host_sync_fixed() -> tuple[Reprofile, RecordingSandbox]:
    backend = RecordingSandbox()
    submission = {**_program("host_sync/fixed.py"), "helper_only_in_fix.py": "MARK = 1\n"}
    result = reprofile(
        _spec(),
        _program("host_sync/train.py"),
        submission,
        _inputs("host_sync"),
        backend,
    )
    return result, backend


# -- the planted signals --------------------------------------------------------------


def test_the_host_sync_fix_reads_the_device_once_per_step_with_the_same_results(
    host_sync_fixed: tuple[Reprofile, RecordingSandbox],
) -> None:
    result, _ = host_sync_fixed
    assert result.outcome == "improved", result.as_dict()
    assert result.outputs_match
    # Four layers, each read once by .item(): one chain (item around
    # _local_scalar_dense) counts once. The fix reads its total once.
    assert result.reference.syncs_per_step == [4, 4, 4]
    assert result.submission.syncs_per_step == [1, 1, 1]
    # Neither reads a tensor's memory outside the dispatcher.
    assert result.reference.host_reads_per_step == result.submission.host_reads_per_step
    assert result.submission.host_reads_per_step == [0, 0, 0]
    assert result.submission.host_reads == result.submission.host_reads_at_import == {}
    assert result.signal_ratio == pytest.approx(0.25)
    assert result.significant
    assert not result.integrity and not result.task_problem
    assert "loss " in result.submission.output  # what the program printed, for reviewers
    assert result.reference.peak_memory_bytes
    top = {op.name: op for op in result.reference.top_operators}
    assert top["aten::mm"].count == 12  # four layers, three profiled steps
    assert top["aten::mm"].self_cpu_us > 0


def test_the_reference_runs_in_a_sandbox_of_its_own_without_the_submissions_files(
    host_sync_fixed: tuple[Reprofile, RecordingSandbox],
) -> None:
    _, backend = host_sync_fixed
    reference, submission = backend.requests
    fixed = (PROGRAMS / "host_sync/fixed.py").read_bytes()
    assert reference.files == {
        "program/train.py": (PROGRAMS / "host_sync/train.py").read_bytes(),
        "task/inputs.py": (PROGRAMS / "host_sync/inputs.py").read_bytes(),
    }
    assert fixed not in reference.files.values()
    assert submission.files["program/train.py"] == fixed
    assert "program/helper_only_in_fix.py" in submission.files


def test_the_launches_fix_runs_three_operators_per_step_instead_of_several_per_element() -> None:
    result = reprofile(
        _spec("launches"),
        _program("launches/loop.py"),
        _program("launches/vector.py"),
        _inputs("launches"),
        get_backend("bwrap"),
    )
    assert result.outcome == "improved", result.as_dict()
    # Operators with no operator nested in them (what runs, not what wraps it): per
    # element seven (the as_strided under each of three selects, mul, add, the
    # assignment's copy_ ...; 96 elements), plus the output's allocation; the fix, three.
    assert result.reference.launches_per_step == [673, 673, 673]
    assert result.submission.launches_per_step == [3, 3, 3]
    # The warm-up call does what a step does; the imports launch nothing.
    assert result.reference.signal_per_call == 673.0
    assert result.submission.signal_per_call == 3.0
    assert result.submission.host_reads_per_step == [0, 0, 0]
    assert result.signal_ratio < 0.01


@pytest.mark.slow
def test_step_time_is_measured_from_outside_and_a_real_speedup_is_significant() -> None:
    result = reprofile(
        _spec("step_time"),
        _program("launches/loop.py"),
        _program("launches/vector.py"),
        _inputs("launches"),
        get_backend("bwrap"),
    )
    assert result.outcome == "improved", result.as_dict()
    timing = result.timing
    assert timing is not None and timing.pairs == 3
    assert len(result.reference.timed_step_s) == len(result.submission.timed_step_s) == 3
    assert timing.ratio < 0.8 and timing.significant
    assert timing.submission_ci[1] < timing.reference_ci[0]
    assert len(result.submission.inside_step_s) == 9  # the runner's own clock, per step
    assert len(result.reference.step_times_s) == 3  # the ProfilerStep windows


def test_torch_reading_a_tensor_in_its_own_python_code_for_the_program_counts() -> None:
    # torch.tensordot reads its dims tensor with .tolist() in torch's own code, twice a
    # call: reads made for the program, as tree_map(Tensor.tolist, ...) would make them.
    # On a CPU host a constant and a computed value are alike host memory.
    result = _host_sync("host_sync/fixed_internal.py")
    assert result.submission.host_reads == {"Tensor.tolist": 24}
    assert result.submission.host_reads_per_step == [8, 8, 8]
    assert result.submission.syncs_per_step == [9, 9, 9]  # and the trace's one item
    assert result.outcome == "not_improved", result.as_dict()


# -- answers that must not score ----------------------------------------------------------


@pytest.mark.parametrize(
    ("fix", "reads"),
    [
        # One read per layer, none of them an aten::item: counted by the runner's hook.
        ("host_sync/tolist.py", {"Tensor.tolist": 12}),
    ],
)
def test_host_reads_outside_the_dispatcher_count_as_syncs(fix: str, reads: dict[str, int]) -> None:
    result = _host_sync(fix)
    assert result.outcome == "not_improved", result.as_dict()
    assert result.submission.host_reads == reads
    per_step = sum(reads.values()) // 3
    assert result.submission.host_reads_per_step == [per_step] * 3
    assert result.submission.syncs_per_step == [per_step] * 3  # none in the trace
    assert result.signal_ratio >= 1.0 and not result.significant
    assert not result.integrity


def test_a_thread_started_while_the_hook_is_on_is_watched_and_must_end_with_the_steps() -> None:
    result = _host_sync("host_sync/thread_read.py")
    assert result.submission.host_reads == {"Tensor.tolist": 12}
    assert result.submission.syncs_per_step == [4, 4, 4]
    # Still running after the steps, it could change what they returned or do work that
    # no window holds: a finding.
    assert result.outcome == "integrity_violation", result.as_dict()
    assert any("still running when the profiled steps ended" in f for f in result.integrity)


@pytest.mark.parametrize(
    ("fix", "finding"),
    [
        # A syncs task takes no view of tensor memory: reads through one are not seen.
        # Counted over the import, the warm-up calls and the steps.
        ("host_sync/view_at_import.py", "views of tensor or shared memory (Tensor.numpy x1)"),
        ("host_sync/numpy_read.py", "(Tensor.__array__ x8, Tensor.numpy x8)"),
        ("host_sync/ctypes_read.py", "(Tensor.data_ptr x16, ctypes.from_address x16)"),
        ("tampering/unwatched_thread.py", "does not watch was alive in step(s) 0, 1, 2"),
        ("tampering/unset_profile.py", "the program called sys.setprofile (in warm-up call 0)"),
    ],
)
def test_reads_the_runner_cannot_count_are_integrity_findings(fix: str, finding: str) -> None:
    result = _host_sync(fix)
    assert result.outcome == "integrity_violation", result.as_dict()
    assert any(finding in item for item in result.integrity), result.integrity


def test_a_launches_fix_that_computes_in_numpy_moves_work_out_of_torch() -> None:
    result = reprofile(
        _spec("launches"),
        _program("launches/loop.py"),
        _program("launches/numpy_loop.py"),
        _inputs("launches"),
        get_backend("bwrap"),
    )
    assert result.outcome == "integrity_violation", result.as_dict()
    assert result.outputs_match  # the same results: only the profiler is blinded
    assert result.submission.host_reads == {"Tensor.numpy": 6, "torch.from_numpy": 3}
    assert any("moves work out of torch" in item for item in result.integrity)


def test_a_fix_that_changes_the_results_is_a_wrong_answer() -> None:
    result = _host_sync("tampering/wrong.py")
    assert result.outcome == "wrong_answer"
    assert not result.outputs_match
    assert result.mismatch.startswith("profiled step 0: output[hidden] differs")


@pytest.mark.parametrize(
    ("fix", "finding"),
    [
        ("tampering/disable_profiler.py", "session had already ended"),
        ("tampering/patch_item.py", "torch.Tensor.item was replaced"),
        ("tampering/patch_profile.py", "torch.profiler.profile was replaced"),
        # Nothing replaced: only the trace, counted outside, shows it.
        ("tampering/toggle_collection.py", "lacks the step window of step(s) 0, 1, 2"),
    ],
)
def test_a_fix_that_blinds_the_profiler_is_an_integrity_finding(fix: str, finding: str) -> None:
    result = _host_sync(fix)
    assert result.outcome == "integrity_violation", result.as_dict()
    assert any(finding in item for item in result.integrity), result.integrity
    assert not result.task_problem


@pytest.mark.slow
def test_a_fix_that_restarts_the_profiler_in_its_step_never_scores() -> None:
    # Restarting a session inside an open step window corrupts torch's heap in the
    # sandbox (malloc aborts) or, where it survives, leaves a trace without the
    # earlier steps' windows and canaries. Either way it must not come out improved.
    result = _host_sync("tampering/restart_profiler.py")
    assert result.outcome in ("integrity_violation", "crashed"), result.as_dict()


def test_a_fix_that_crashes_gets_an_error_not_an_exception() -> None:
    result = _host_sync("tampering/crash.py")
    assert result.outcome == "crashed"
    assert "signal 6" in result.submission.error
    assert not result.task_problem and not result.reference.error_kind


@pytest.mark.slow
def test_a_fix_that_hangs_times_out() -> None:
    result = reprofile(
        _spec(),
        _program("host_sync/train.py"),
        _program("tampering/hang.py"),
        _inputs("host_sync"),
        get_backend("bwrap"),
        timeout_s=5.0,
    )
    assert result.outcome == "timeout"
    assert result.submission.error_kind == "timeout"


def test_a_failing_reference_is_the_tasks_problem_and_the_submission_is_not_run() -> None:
    result = reprofile(
        _spec(),
        _program("tampering/crash.py"),
        _program("host_sync/fixed.py"),
        _inputs("host_sync"),
        get_backend("bwrap"),
    )
    assert result.outcome == "task_problem"
    assert result.task_problem.startswith("the reference program failed (crashed)")
    assert not result.submission.error_kind and not result.submission.outputs_ok
    assert result.submission.trace is None  # never imported, never profiled


# -- the trace, counted on the trusted side ---------------------------------------------


def _nonce(trace: dict[str, Any]) -> str:
    name = next(e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("bw_"))
    return str(name.partition("/")[2])


@pytest.fixture(scope="module")
def real_trace(host_sync_fixed: tuple[Reprofile, RecordingSandbox]) -> dict[str, Any]:
    """The reference's trace from a real grading: what production parses."""
    trace = host_sync_fixed[0].reference.trace
    assert trace is not None
    document: dict[str, Any] = json.loads(trace)
    return document


def test_a_real_trace_counts_the_same_here_as_in_the_grading(real_trace: dict[str, Any]) -> None:
    facts = analyse_trace(json.dumps(real_trace).encode(), 3, _nonce(real_trace))
    assert facts.findings == []
    assert facts.syncs == [4, 4, 4]
    assert all(seconds > 0 for seconds in facts.step_s)


def test_a_trace_without_one_steps_canary_is_a_finding(real_trace: dict[str, Any]) -> None:
    nonce = _nonce(real_trace)
    kept = [e for e in real_trace["traceEvents"] if e.get("name") != f"bw_canary#1/{nonce}"]
    facts = analyse_trace(json.dumps({**real_trace, "traceEvents": kept}).encode(), 3, nonce)
    assert facts.findings == [
        "the runner's canary op is missing from step(s) 1 of the trace: "
        "the profiler stopped recording"
    ]


def test_a_canary_with_another_gradings_nonce_does_not_count(real_trace: dict[str, Any]) -> None:
    facts = analyse_trace(json.dumps(real_trace).encode(), 3, "0" * 16)
    assert facts.findings == [
        "the trace has 0 windows of the program's run, expected one: "
        "the profiler was not recording all the time"
    ]


def test_a_trace_with_more_or_fewer_steps_than_were_run_is_a_finding(
    real_trace: dict[str, Any],
) -> None:
    data = json.dumps(real_trace).encode()
    assert "step window of step(s) 3" in analyse_trace(data, 4, _nonce(real_trace)).findings[0]
    assert "expected exactly one" in analyse_trace(data, 2, _nonce(real_trace)).findings[0]


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"traceEvents": 3}',
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "1"}]}',
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": 7, "ts": 1, "dur": 1}]}',
    ],
)
def test_a_trace_that_does_not_parse_raises_trace_error(data: bytes) -> None:
    with pytest.raises(TraceError):
        analyse_trace(data, 1, "nonce")


def test_an_oversized_trace_is_refused_before_parsing() -> None:
    with pytest.raises(TraceTooLarge):
        analyse_trace(b" " * (MAX_TRACE_BYTES + 1), 1, "nonce")


def test_a_trace_of_millions_of_empty_containers_is_refused_before_parsing() -> None:
    # 64 MiB of "[]," would make the parser build some 22 million lists (2 GB).
    data = b'{"traceEvents": [], "x": [' + b"[]," * (5 * 1024 * 1024) + b"[]]}"
    with pytest.raises(TraceTooLarge, match="JSON objects and arrays"):
        analyse_trace(data, 1, "nonce")


@pytest.mark.parametrize("category", [7, None])
def test_an_event_whose_category_is_not_a_string_is_skipped_not_a_crash(category: Any) -> None:
    trace = {"traceEvents": [{"ph": "X", "cat": category, "name": "x", "ts": 0, "dur": 1}]}
    facts = analyse_trace(json.dumps(trace).encode(), 1, "nonce")
    assert "lacks the step window of step(s) 0" in facts.findings[0]


@pytest.mark.parametrize("category", [[], {}])
def test_an_event_holding_a_container_outside_its_args_is_refused(category: Any) -> None:
    trace = {"traceEvents": [{"ph": "X", "cat": category, "name": "x", "ts": 0, "dur": 1}]}
    with pytest.raises(TraceError, match="holds a"):
        analyse_trace(json.dumps(trace).encode(), 1, "nonce")


def _events_text(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) for e in events]


def test_annotation_names_that_swallow_the_events_after_them_are_refused(
    real_trace: dict[str, Any],
) -> None:
    """Kineto writes an annotation's name unescaped: a name can open an array inside its
    own event that takes in every event after it, and a later one close it. The JSON
    still parses; the layout gives it away."""
    nonce, events = _nonce(real_trace), real_trace["traceEvents"]
    first = next(i for i, e in enumerate(events) if e.get("name") == "ProfilerStep#0")
    last = next(i for i, e in enumerate(events) if e.get("name") == f"bw_canary#2/{nonce}")
    texts = _events_text(events)
    texts[first + 1] = texts[first + 1].replace('"name": "', '"name": "a", "junk": [{"x": "b', 1)
    texts[last - 1] = texts[last - 1].replace('"name": "', '"name": "c"}], "w": "v', 1)
    data = ('{"traceEvents": [' + ", ".join(texts) + "]}").encode()
    with pytest.raises(TraceError, match=r"'junk' holds a list.*rename it"):
        analyse_trace(data, 3, nonce)


def test_a_second_key_in_an_event_is_refused(real_trace: dict[str, Any]) -> None:
    """A name that closes its string can give its own event a second category."""
    texts = _events_text(real_trace["traceEvents"])
    at = next(i for i, t in enumerate(texts) if '"cat": "user_annotation"' in t)
    texts[at] = texts[at].replace('"name": "', '"name": "x", "cat": "cpu_op", "y": "', 1)
    data = ('{"traceEvents": [' + ", ".join(texts) + "]}").encode()
    with pytest.raises(TraceError, match="key 'cat' is in the trace's text"):
        analyse_trace(data, 3, _nonce(real_trace))


def test_events_moved_out_of_the_event_list_are_refused(real_trace: dict[str, Any]) -> None:
    trace = {"traceEvents": real_trace["traceEvents"][:5], "x": real_trace["traceEvents"][5:]}
    with pytest.raises(TraceError, match="'x' holds events"):
        analyse_trace(json.dumps(trace).encode(), 3, _nonce(real_trace))


def test_more_windows_named_as_the_runners_are_a_finding(real_trace: dict[str, Any]) -> None:
    """A program that learnt the nonce could put its work in windows named as the
    runner's copy or canary windows, which the counts leave out."""
    nonce, events = _nonce(real_trace), real_trace["traceEvents"]
    step = next(e for e in events if e.get("name") == "ProfilerStep#1")
    for name in (f"bw_keep#1/{nonce}", f"bw_canary#7/{nonce}"):
        extra = {**step, "name": name, "ts": step["ts"] + 1, "dur": 1.0}
        data = json.dumps({**real_trace, "traceEvents": [*events, extra]}).encode()
        findings = analyse_trace(data, 3, nonce).findings
        assert any("named as the runner's" in f for f in findings), findings


def test_work_inside_the_canary_is_a_finding() -> None:
    trace = {
        "traceEvents": [
            event("bw_program/n", "user_annotation", 0, 100),
            event("ProfilerStep#0", "user_annotation", 0, 100),
            event("bw_canary#0/n", "user_annotation", 50, 40),
            event("aten::add", "cpu_op", 51, 38),
            # A dispatch mode that runs the program's loop inside the canary's op.
            event("aten::item", "cpu_op", 52, 5),
            event("aten::item", "cpu_op", 60, 5),
        ]
    }
    facts = analyse_trace(json.dumps(trace).encode(), 1, "n")
    assert facts.findings == [
        "work ran inside the runner's own operators (3 operator event(s): aten::add, aten::item)"
    ]


def event(name: str, cat: str, ts: float, dur: float) -> dict[str, Any]:
    """A complete event of a hand-written trace, all on one thread."""
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def test_nested_reads_count_once_by_their_innermost_event() -> None:
    trace = {
        "traceEvents": [
            event("bw_program/n", "user_annotation", 0, 100),
            event("ProfilerStep#0", "user_annotation", 0, 100),
            # bool(t): is_nonzero around item around _local_scalar_dense, one read.
            event("aten::is_nonzero", "cpu_op", 10, 10),
            event("aten::item", "cpu_op", 11, 8),
            event("aten::_local_scalar_dense", "cpu_op", 12, 6),
            # A bare item whose inner event was not recorded still counts.
            event("aten::item", "cpu_op", 30, 5),
            # On CUDA: the runtime's sync inside the scalar read is the same read.
            event("aten::_local_scalar_dense", "cpu_op", 40, 10),
            event("cudaStreamSynchronize", "cuda_runtime", 42, 6),
            event("cudaDeviceSynchronize", "cuda_runtime", 60, 5),
            event("bw_canary#0/n", "user_annotation", 90, 5),
            event("aten::add", "cpu_op", 91, 2),
        ]
    }
    facts = analyse_trace(json.dumps(trace).encode(), 1, "n")
    assert facts.findings == []
    assert facts.syncs == [4]
    # The innermost operators are launches (the _local_scalar_dense at 12, the bare item,
    # the _local_scalar_dense at 40); the canary's add is the runner's, not the program's.
    assert facts.launches == [3]


def test_a_trace_nested_deep_is_counted_in_one_pass() -> None:
    depth = 100_000
    events = [
        {"ph": "X", "cat": "user_annotation", "name": name, "ts": 0, "dur": 4 * depth}
        for name in ("bw_program/n", "ProfilerStep#0")
    ]
    events += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::item", "ts": 1 + i, "dur": 4 * depth - 2 * i}
        for i in range(1, depth)
    ]
    for event in events:
        event.update(pid=1, tid=1)
    facts = analyse_trace(json.dumps({"traceEvents": events}).encode(), 1, "n")
    assert facts.syncs == [1] and facts.launches == [1]


def test_a_canary_numbered_with_a_digit_that_is_not_ascii_is_not_a_canary(
    real_trace: dict[str, Any],
) -> None:
    nonce = _nonce(real_trace)
    extra = {**real_trace["traceEvents"][0], "name": f"bw_canary#\u00b2/{nonce}"}
    extra.update(ph="X", cat="user_annotation", ts=0, dur=1)
    trace = {**real_trace, "traceEvents": [*real_trace["traceEvents"], extra]}
    facts = analyse_trace(json.dumps(trace).encode(), 3, nonce)
    assert facts.findings == [] and facts.syncs == [4, 4, 4]


@pytest.mark.parametrize(
    "count",
    [10**400, int("9" * 4300), -1, True, 2.5],
    ids=["beyond-a-float", "4300-digits", "negative", "bool", "float"],
)
def test_a_report_of_host_reads_with_counts_no_runner_makes_is_refused(count: Any) -> None:
    """The counts a runner's reply carries are the watch's (``Watch.report``): a count
    a float cannot hold, or no count at all, is a malformed report, never a figure the
    grader computes with (the runner's watch is out of the program's reach; this is
    what the grader does if a report were forged all the same)."""
    from graders.profiling.reprofile import _host_reads

    spec = _spec()
    report: dict[str, Any] = {
        "import": {},
        "between": {},
        "warmup": [{} for _ in range(spec.warmup)],
        "steps": [{"Tensor.tolist": 2} for _ in range(spec.steps)],
        "unwatched_steps": [],
        "threads": [41, 42],
    }
    assert _host_reads(report, spec) is not None
    report["threads"] = [count]
    assert _host_reads(report, spec) is None
    report["threads"] = [41]
    report["steps"][0] = {"Tensor.tolist": count}
    assert _host_reads(report, spec) is None


# aten operators whose schema returns a plain value read from metadata only (sizes,
# strides, flags, the dispatcher's choices), or whose plain-value overloads are
# TorchScript's list operations while their tensor overloads (``aten::index``,
# ``aten::eq``, ``aten::ne``) return tensors and are everyday operators.
NOT_READS = frozenset(
    {
        "aten::_batch_norm_impl_index",
        "aten::_cslt_sparse_mm_search",
        "aten::_cudnn_attention_forward",
        "aten::_debug_has_internal_overlap",
        "aten::_dimI",
        "aten::_dimV",
        "aten::_efficient_attention_forward",
        "aten::_fused_sdp_choice",
        "aten::_has_compatible_shallow_copy_type",
        "aten::_has_same_storage_numel",
        "aten::_is_zerotensor",
        "aten::_nested_get_ragged_idx",
        "aten::_nnz",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_fused_attention_overrideable",
        "aten::_use_cudnn_ctc_loss",
        "aten::_use_miopen_ctc_loss",
        "aten::_version",
        "aten::cudnn_is_acceptable",
        "aten::dense_dim",
        "aten::dim",
        "aten::element_size",
        "aten::eq",
        "aten::get_device",
        "aten::index",
        "aten::is_coalesced",
        "aten::is_complex",
        "aten::is_conj",
        "aten::is_contiguous",
        "aten::is_distributed",
        "aten::is_floating_point",
        "aten::is_inference",
        "aten::is_leaf",
        "aten::is_neg",
        "aten::is_non_overlapping_and_dense",
        "aten::is_pinned",
        "aten::is_same_size",
        "aten::is_set_to",
        "aten::is_signed",
        "aten::is_strides_like_format",
        "aten::len",
        "aten::ne",
        "aten::numel",
        "aten::output_nr",
        "aten::q_per_channel_axis",
        "aten::q_scale",
        "aten::q_zero_point",
        "aten::result_type",
        "aten::retains_grad",
        "aten::size",
        "aten::sparse_dim",
        "aten::storage_offset",
        "aten::stride",
        "aten::sym_is_contiguous",
        "aten::sym_numel",
        "aten::sym_size",
        "aten::sym_storage_offset",
        "aten::sym_stride",
    }
)


def test_every_operator_returning_a_plain_value_is_a_read_or_reviewed_metadata() -> None:
    """An operator that hands back a number computed from a tensor's values reads the
    tensor on the host with no item recorded (``fbgemm_linear_quantize_weight`` returns
    a weight's scale). Each one torch's schemas list is either counted as a sync or
    reviewed as metadata above; a new torch's new ones fail here until reviewed."""
    import torch

    plain = {"float", "int", "bool", "Scalar", "number", "SymInt", "complex"}
    returning = set()
    for schema in torch._C._jit_get_all_schemas():
        takes_tensor = any("Tensor" in str(a.type) for a in schema.arguments)
        returns = [str(r.type) for r in schema.returns]
        scalar = any(t in plain or "float" in t or "bool" in t for t in returns)
        if schema.name.startswith("aten::") and takes_tensor and scalar:
            returning.add(schema.name)
    unreviewed = sorted(returning - SCALAR_READS - NOT_READS)
    assert unreviewed == [], "count these as syncs or add them to NOT_READS with a reason"
    assert not SCALAR_READS & NOT_READS
