"""Scoring answers to the catalog's profiling tasks, field type by field type.

Each answer is written the way a solver would write it: the task's expert answer
with one field changed. Evidence positions are read from the task's own traces
(``load_trace``, ``Trace.events_for_id``), never assumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from graders.filetext import file_bytes
from graders.profiling.grading import grade_answer
from graders.profiling.scoring import AnswerScore, FieldResult, score_answer
from graders.profiling.spec import ProfilingSpec
from graders.profiling.trace import Trace, load_trace
from tasks.bundle import load_bundle

CATALOG = Path(__file__).resolve().parents[3] / "reference_solutions"
ANSWER_TASKS = sorted(p.parent.name for p in CATALOG.glob("prof-*/key.json"))
HOST_SYNC = "prof-host-sync"  # evidence by position (ev:), set with a required item
GEMM = "prof-dominant-gemm"  # evidence by correlation id (corr:)
FLOOD = "prof-launch-flood"  # a templated key kernel; a set without required items
PAGEABLE = "prof-pageable-copies"  # rel_tol 0.02
ALLREDUCE = "prof-exposed-allreduce"  # abs_tol 2.0
RANKS = "prof-rank-imbalance"  # two traces: evidence ids carry rank<r>/

MANGLED_ADD = (
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5"
    "arrayIPcLm3EEEEviT0_T1_"
)


@cache
def _files(name: str) -> dict[str, str]:
    bundle = load_bundle(CATALOG / name)
    return {f.path: f.text for f in bundle.files}


@cache
def _spec(name: str) -> ProfilingSpec:
    return ProfilingSpec.from_manifest(load_bundle(CATALOG / name).manifest, _files(name))


@cache
def _trace(name: str, rank: int = 0) -> Trace:
    """The rank's trace, read from the bundle's file by the trace library itself."""
    path = f"traces/rank{rank}.json.gz"
    return load_trace(file_bytes(path, _files(name)[path]), name=path)


def _expert(name: str) -> dict[str, Any]:
    return json.loads(_files(name)["expert.json"])


def _key(name: str) -> dict[str, Any]:
    return json.loads(_files(name)["key.json"])


def _score(name: str, **changes: Any) -> AnswerScore:
    answer = {**_expert(name), **changes}
    spec = _spec(name)
    return score_answer(spec, json.dumps(answer).encode(), spec.loaded)


def _field(result: AnswerScore, name: str) -> FieldResult:
    return next(f for f in result.fields if f.name == name)


def _points(name: str) -> dict[str, float]:
    return {r.name: r.points for r in _spec(name).scored_fields}


def _partial(name: str, earned: Mapping[str, float]) -> float:
    """The partial score when each field earns ``earned`` (default 1) of its points."""
    points = _points(name)
    total = sum(points.values())
    return round(sum(p * earned.get(f, 1.0) for f, p in points.items()) / total, 4)


# -- the expert answers -----------------------------------------------------------------


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_the_expert_answer_hits_every_field(name):
    result = _score(name)
    assert result.valid and result.error == ""
    assert [f.name for f in result.fields] == [r.name for r in _spec(name).scored_fields]
    assert all(f.hit and f.score == 1.0 for f in result.fields), [
        (f.name, f.message) for f in result.fields if not f.hit
    ]
    assert (result.strict, result.partial) == (1.0, 1.0)


@pytest.mark.parametrize("name", ANSWER_TASKS)
def test_the_catalog_negatives_earn_the_partial_score_they_declare(name):
    spec = _spec(name)
    assert spec.negative_scores
    for path, declared in spec.negative_scores.items():
        result = score_answer(spec, _files(name)[path].encode(), spec.loaded)
        assert result.valid, (path, result.error)
        assert result.strict == 0.0, path
        assert abs(result.partial - declared) <= 0.005, (path, result.partial, declared)


# -- kernel -----------------------------------------------------------------------------


def test_the_flood_key_names_a_templated_kernel():
    # What the kernel cases below rely on: the key is the full name as the trace has it.
    key = _key(FLOOD)["dominant_kernel"]
    assert key.startswith("void at::native::vectorized_elementwise_kernel<4, ")
    names = set(_trace(FLOOD).names)
    assert key in names


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
            " std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>,"
            " std::array<char*, 3ul>)",
            "matches",
        ),
        ("at::native::vectorized_elementwise_kernel", "matches"),
        ("  at::native::vectorized_elementwise_kernel  ", "matches"),
        ("at::native::(anonymous namespace)::vectorized_elementwise_kernel", "matches"),
        ("vectorized_elementwise_kernel", "matches (by its unqualified name)"),
        ("vectorized_elementwise_kernel<4, float>", "matches (by its unqualified name)"),
    ],
)
def test_a_kernel_name_matches_after_normalising(answer, message):
    result = _field(_score(FLOOD, dominant_kernel=answer), "dominant_kernel")
    assert (result.hit, result.score, result.message) == (True, 1.0, message)


def test_a_mangled_kernel_name_matches_the_key():
    """docs/bundles.md and the task's statement: "an Itanium-mangled name is demangled"."""
    result = _field(_score(FLOOD, dominant_kernel=MANGLED_ADD), "dominant_kernel")
    assert result.hit, result.message


@pytest.mark.parametrize(
    "answer",
    [
        "elementwise_kernel",
        "void at::native::elementwise_kernel<128, 2>(int)",
        "at::native::unrolled_elementwise_kernel",
        "other::vectorized_elementwise_kernel",
        "vectorized_elementwise",
        "cudaLaunchKernel",
    ],
)
def test_a_wrong_kernel_misses_without_naming_the_key(answer):
    result = _field(_score(FLOOD, dominant_kernel=answer), "dominant_kernel")
    assert (result.hit, result.score) == (False, 0.0)
    assert result.message.endswith("is not the kernel asked for")
    assert "vectorized_elementwise_kernel<4" not in result.message
    assert result.expected == _key(FLOOD)["dominant_kernel"]  # private, for operators


def test_the_gemm_kernel_on_a_task_whose_key_is_another_kernel_misses():
    gemm = _key(GEMM)["dominant_kernel"]
    result = _field(_score(FLOOD, dominant_kernel=gemm), "dominant_kernel")
    assert not result.hit


# -- number -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "field", "value", "hit"),
    [
        # abs_tol 2.0 around 42.79
        (HOST_SYNC, "gpu_idle_pct", 42.79, True),
        (HOST_SYNC, "gpu_idle_pct", 44.79, True),
        (HOST_SYNC, "gpu_idle_pct", 40.79, True),
        (HOST_SYNC, "gpu_idle_pct", 44.8, False),
        (HOST_SYNC, "gpu_idle_pct", 40.78, False),
        # abs_tol 2.0 around 30.95
        (ALLREDUCE, "communication_pct", 32.95, True),
        (ALLREDUCE, "communication_pct", 28.95, True),
        (ALLREDUCE, "communication_pct", 32.96, False),
        (ALLREDUCE, "communication_pct", 28.94, False),
        # abs_tol 0: exact
        (HOST_SYNC, "syncs_per_step", 4, True),
        (HOST_SYNC, "syncs_per_step", 4.0, True),
        (HOST_SYNC, "syncs_per_step", 5, False),
        (HOST_SYNC, "syncs_per_step", 4.001, False),
        # rel_tol 0.05 around 6700.932 (± 335.0466)
        (HOST_SYNC, "idle_after_syncs_us", 6700.932, True),
        (HOST_SYNC, "idle_after_syncs_us", 7035.9786, True),
        (HOST_SYNC, "idle_after_syncs_us", 6365.8854, True),
        (HOST_SYNC, "idle_after_syncs_us", 7036.0, False),
        (HOST_SYNC, "idle_after_syncs_us", 6365.8, False),
        # rel_tol 0.02 around 16.0 (± 0.32)
        (PAGEABLE, "pageable_mib_per_step", 16.32, True),
        (PAGEABLE, "pageable_mib_per_step", 15.68, True),
        (PAGEABLE, "pageable_mib_per_step", 16.33, False),
        (PAGEABLE, "pageable_mib_per_step", 15.67, False),
    ],
)
def test_a_number_hits_within_its_tolerance_and_misses_just_past_it(name, field, value, hit):
    result = _field(_score(name, **{field: value}), field)
    assert result.hit is hit, (value, result.message)
    assert result.score == (1.0 if hit else 0.0)
    if hit:
        assert result.message == "within the tolerance"
    else:
        assert result.message.startswith(f"{value:g} is outside the tolerance")


@pytest.mark.parametrize(
    ("name", "field", "value", "tolerance"),
    [
        (HOST_SYNC, "gpu_idle_pct", 50, "(±2)"),
        (HOST_SYNC, "syncs_per_step", 2, "(exact)"),
        (HOST_SYNC, "idle_after_syncs_us", 9000.5, "(±5.0%)"),
        (PAGEABLE, "pageable_mib_per_step", 8, "(±2.0%)"),
    ],
)
def test_a_number_miss_states_the_declared_tolerance_not_the_key(name, field, value, tolerance):
    result = _field(_score(name, **{field: value}), field)
    assert result.message == f"{value:g} is outside the tolerance {tolerance}"
    key = _key(name)[field]
    assert f"{key:g}" not in result.message and str(key) not in result.message


# -- category ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [HOST_SYNC, GEMM, RANKS])
def test_a_wrong_category_misses_its_points(name):
    key = _key(name)["bottleneck"]
    wrong = "memory_bound" if key != "memory_bound" else "compute_bound"
    result = _score(name, bottleneck=wrong)
    field = _field(result, "bottleneck")
    assert (field.hit, field.score) == (False, 0.0)
    assert field.message == f"'{wrong}' is not the bottleneck"
    assert key not in field.message
    assert result.strict == 0.0
    assert result.partial == _partial(name, {"bottleneck": 0.0})


# -- set --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixes", "score", "hit"),
    [
        (["cuda_graphs", "fuse_small_kernels"], 1.0, True),
        (["fuse_small_kernels", "cuda_graphs"], 1.0, True),
        (["cuda_graphs"], 0.6667, True),  # P 1, R 1/2: F1 2/3 >= 0.66
        (["cuda_graphs", "fuse_small_kernels", "larger_batch"], 0.8, True),
        (["cuda_graphs", "larger_batch"], 0.5, False),
        (["larger_batch"], 0.0, False),
        ([], 0.0, False),
    ],
)
def test_a_set_scores_its_f1_against_the_key(fixes, score, hit):
    result = _score(FLOOD, fixes=fixes)
    field = _field(result, "fixes")
    assert (field.score, field.hit) == (score, hit), field.message
    assert field.message.startswith(f"F1 {score:.2f}")
    assert result.partial == _partial(FLOOD, {"fixes": score})


@pytest.mark.parametrize(
    ("fixes", "score", "hit", "message"),
    [
        (["remove_host_syncs"], 1.0, True, "F1 1.00"),
        (["remove_host_syncs", "larger_batch"], 0.6667, True, "F1 0.67"),
        (
            ["remove_host_syncs", "larger_batch", "pin_host_memory"],
            0.5,
            False,
            "F1 0.50, below the 0.66 wanted",
        ),
        (["larger_batch"], 0.0, False, "a required item is missing"),
        (["cuda_graphs", "fuse_small_kernels"], 0.0, False, "a required item is missing"),
        ([], 0.0, False, "a required item is missing"),
    ],
)
def test_a_set_without_its_required_item_scores_nothing(fixes, score, hit, message):
    field = _field(_score(HOST_SYNC, fixes=fixes), "fixes")
    assert (field.score, field.hit, field.message) == (score, hit, message)


# -- evidence ---------------------------------------------------------------------------


def _evidence(name: str, ids: list[str]) -> FieldResult:
    return _field(_score(name, evidence=ids), "evidence")


def _correlation_of(trace: Trace, position: int) -> str:
    """The ``corr:`` id of the event at ``position`` of traceEvents."""
    row = int(trace.rows_at([position])[0])
    ids = [i for i in trace.evidence_ids(row) if i.startswith("corr:")]
    assert ids, f"event {position} has no correlation id"
    return ids[0]


def test_the_keys_own_ids_hit():
    for name in (HOST_SYNC, GEMM, RANKS):
        key = _key(name)["evidence"]
        field = _evidence(name, key)
        assert (field.hit, field.score) == (True, 1.0), (name, field.message)
        assert field.message == f"all {len(key)} cited events are the bottleneck's"


def test_an_event_cited_by_its_correlation_id_instead_of_its_position_hits():
    key = _key(HOST_SYNC)["evidence"]  # ev:<position> ids
    trace = _trace(HOST_SYNC)
    first = int(key[0].removeprefix("ev:"))
    corr = _correlation_of(trace, first)
    assert first in trace.events_for_id(corr)
    field = _evidence(HOST_SYNC, [corr, key[1]])
    assert (field.hit, field.score) == (True, 1.0), field.message


def test_an_event_cited_by_its_position_instead_of_its_correlation_id_hits():
    key = _key(GEMM)["evidence"]  # corr:<n> ids
    positions = _trace(GEMM).events_for_id(key[0])
    assert len(positions) == 2  # the launch call and the kernel
    for position in positions:
        field = _evidence(GEMM, [f"ev:{position}", key[1]])
        assert (field.hit, field.score) == (True, 1.0), (position, field.message)


def test_one_event_named_twice_counts_once():
    key = _key(HOST_SYNC)["evidence"]
    trace = _trace(HOST_SYNC)
    corr = _correlation_of(trace, int(key[0].removeprefix("ev:")))
    for cited in ([key[0], corr], [key[0], key[0]], [key[0]]):
        field = _evidence(HOST_SYNC, cited)
        assert (field.hit, field.score) == (False, 0.5), cited
        assert field.message == "1 distinct event(s) cited; at least 2 wanted"


def test_both_events_of_one_correlation_id_are_one_piece_of_evidence():
    key = _key(GEMM)["evidence"]
    launch, kernel = _trace(GEMM).events_for_id(key[0])
    field = _evidence(GEMM, [f"ev:{launch}", f"ev:{kernel}"])
    assert (field.hit, field.score) == (False, 0.5)
    assert field.message == "1 distinct event(s) cited; at least 2 wanted"


def test_fewer_than_min_items_distinct_events_is_a_partial_miss():
    key = _key(FLOOD)["evidence"]  # min_items 3
    assert next(r for r in _spec(FLOOD).fields if r.name == "evidence").min_items == 3
    field = _evidence(FLOOD, key[:2])
    assert (field.hit, field.score) == (False, 0.6667)
    assert field.message == "2 distinct event(s) cited; at least 3 wanted"
    assert _evidence(FLOOD, key[:3]).hit


def test_an_id_naming_no_event_scores_nothing():
    trace = _trace(HOST_SYNC)
    beyond = f"ev:{trace.event_count}"
    assert trace.events_for_id(beyond) == []
    assert trace.events_for_id("corr:999999999") == []
    key = _key(HOST_SYNC)["evidence"]
    for missing in (beyond, "corr:999999999", "ext:999999999"):
        field = _evidence(HOST_SYNC, [*key[:2], missing])
        assert (field.hit, field.score) == (False, 0.0), missing
        assert field.message == f"{missing} is not an event of the trace"


def test_a_real_event_that_is_not_the_bottlenecks_lowers_the_score():
    key = _key(HOST_SYNC)["evidence"]
    trace = _trace(HOST_SYNC)
    wanted = {p for i in key for p in trace.events_for_id(i)}
    stray = next(
        p for p in range(trace.event_count) if p not in wanted and trace.events_for_id(f"ev:{p}")
    )
    field = _evidence(HOST_SYNC, [*key[:2], f"ev:{stray}"])
    assert (field.hit, field.score) == (False, 0.6667)  # precision 2/3, coverage 1
    assert field.message == "some cited events are not the bottleneck's"
    only_stray = _evidence(HOST_SYNC, [f"ev:{stray}"])
    assert (only_stray.hit, only_stray.score) == (False, 0.0)


def test_the_two_trace_task_wants_the_rank_prefix():
    key = _key(RANKS)["evidence"]
    assert all(i.startswith("rank1/") for i in key)
    bare = key[0].removeprefix("rank1/")
    # The same id names events on both ranks: only the prefix says which.
    assert _trace(RANKS, 0).events_for_id(bare) and _trace(RANKS, 1).events_for_id(bare)

    missing_prefix = _evidence(RANKS, [bare, key[1]])
    assert (missing_prefix.hit, missing_prefix.score) == (False, 0.0)
    assert missing_prefix.message == f"{bare} is not an event of the trace"

    other_rank = _evidence(RANKS, [f"rank0/{bare}", key[1]])
    assert (other_rank.hit, other_rank.score) == (False, 0.25)
    assert other_rank.message == "some cited events are not the bottleneck's"

    no_such_rank = _evidence(RANKS, [f"rank2/{bare}", key[1]])
    assert (no_such_rank.hit, no_such_rank.score) == (False, 0.0)

    position = _trace(RANKS, 1).events_for_id(bare)[-1]
    by_position = _evidence(RANKS, [f"rank1/ev:{position}", key[1]])
    assert (by_position.hit, by_position.score) == (True, 1.0), by_position.message


def test_a_one_trace_task_takes_no_rank_prefix():
    key = _key(HOST_SYNC)["evidence"]
    field = _evidence(HOST_SYNC, [f"rank0/{key[0]}", key[1]])
    assert (field.hit, field.score) == (False, 0.0)
    assert field.message == f"rank0/{key[0]} is not an event of the trace"


# -- invalid answers --------------------------------------------------------------------


def _raw(name: str, text: str) -> AnswerScore:
    spec = _spec(name)
    return score_answer(spec, text.encode(), spec.loaded)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda a: a["evidence"].append(5),
            "$.evidence[3]: 5 is not of type 'string'",
        ),
        (lambda a: a.pop("fixes"), "$: 'fixes' is a required property"),
        (lambda a: a.update(gpu_idle_pct="42.8"), "$.gpu_idle_pct: '42.8' is not of type 'number'"),
        (lambda a: a.update(bottleneck="slow_gpu"), "$.bottleneck: 'slow_gpu' is not one of"),
        (
            lambda a: a.update(evidence=["event 38"]),
            "$.evidence[0]: 'event 38' does not match",
        ),
        (
            lambda a: a.update(fixes=["remove_host_syncs", "remove_host_syncs"]),
            "$.fixes: ['remove_host_syncs', 'remove_host_syncs'] has non-unique elements",
        ),
        (
            lambda a: a.update(confidence=0.9),
            "$: Additional properties are not allowed ('confidence' was unexpected)",
        ),
    ],
)
def test_an_answer_that_breaks_the_schema_scores_zero_naming_the_json_path(change, error):
    answer = _expert(HOST_SYNC)
    change(answer)
    result = _raw(HOST_SYNC, json.dumps(answer))
    assert not result.valid
    assert result.error.startswith(error), result.error
    assert (result.strict, result.partial, result.fields) == (0.0, 0.0, ())
    report = grade_answer(_spec(HOST_SYNC), {"answer.json": json.dumps(answer)})
    assert report["verdict"] == "wrong_answer"
    assert report["reason"].startswith(f"invalid answer: {error}")
    assert report["score"]["partial"] == 0.0 and report["fields"] == []


@pytest.mark.parametrize(
    "text",
    ['{"bottleneck": "host_sync",', "host_sync", "", '{"a": 1} trailing', "NaN"],
)
def test_an_answer_that_is_not_json_scores_zero(text):
    result = _raw(HOST_SYNC, text)
    assert not result.valid
    assert result.error.startswith("not JSON"), result.error
    assert (result.strict, result.partial) == (0.0, 0.0)


def test_a_json_value_that_is_not_an_object_is_a_schema_error():
    result = _raw(HOST_SYNC, json.dumps([_expert(HOST_SYNC)]))
    assert not result.valid and result.error.startswith("$: [{'bottleneck'")
    assert (result.strict, result.partial) == (0.0, 0.0)
    short = _raw(HOST_SYNC, "[1, 2]")
    assert short.error == "$: [1, 2] is not of type 'object'"


def test_a_submission_without_the_answer_file_scores_zero():
    report = grade_answer(_spec(HOST_SYNC), {"expert.json": _files(HOST_SYNC)["expert.json"]})
    assert report["verdict"] == "wrong_answer"
    assert report["answer_error"] == "no answer.json in the submission (it has expert.json)"
    assert report["score"]["partial"] == 0.0


# -- text fields ------------------------------------------------------------------------


def test_a_text_field_reaches_texts_unscored():
    result = _score(HOST_SYNC, explanation="The GPU waits on cudaStreamSynchronize.")
    assert result.texts == {"explanation": "The GPU waits on cudaStreamSynchronize."}
    assert "explanation" not in {f.name for f in result.fields}
    assert result.strict == 1.0

    expert = _score(HOST_SYNC)
    assert expert.texts == {"explanation": _expert(HOST_SYNC)["explanation"]}

    without = dict(_expert(HOST_SYNC))
    del without["explanation"]
    silent = _raw(HOST_SYNC, json.dumps(without))
    assert silent.texts == {} and silent.strict == 1.0

    report = grade_answer(_spec(HOST_SYNC), {"answer.json": json.dumps(_expert(HOST_SYNC))})
    assert report["texts"] == {"explanation": _expert(HOST_SYNC)["explanation"]}


# -- strict and partial -----------------------------------------------------------------


def test_the_host_sync_points_are_weighted():
    assert _points(HOST_SYNC) == {
        "bottleneck": 3.0,
        "dominant_kernel": 1.0,
        "gpu_idle_pct": 1.0,
        "syncs_per_step": 1.0,
        "idle_after_syncs_us": 1.0,
        "evidence": 2.0,
        "fixes": 2.0,
    }


@pytest.mark.parametrize(
    ("changes", "strict", "partial", "hits"),
    [
        ({}, 1.0, 1.0, 7),
        ({"bottleneck": "compute_bound"}, 0.0, round(8 / 11, 4), 6),
        ({"dominant_kernel": "gemm"}, 0.0, round(10 / 11, 4), 6),
        ({"bottleneck": "compute_bound", "syncs_per_step": 3}, 0.0, round(7 / 11, 4), 5),
        # A set that hits with F1 2/3: strict, but not all of its points.
        ({"fixes": ["remove_host_syncs", "larger_batch"]}, 1.0, round((9 + 2 * 0.6667) / 11, 4), 7),
        # Half the evidence wanted: half its points.
        ({"evidence": ["ev:38"]}, 0.0, round(10 / 11, 4), 6),
        ({"fixes": ["larger_batch"], "evidence": ["ev:0"]}, 0.0, round(7 / 11, 4), 5),
    ],
)
def test_strict_and_partial_scores(changes, strict, partial, hits):
    result = _score(HOST_SYNC, **changes)
    assert (result.strict, result.partial, result.hits) == (strict, partial, hits)
    assert result.points_total == 11.0
    report = grade_answer(
        _spec(HOST_SYNC), {"answer.json": json.dumps({**_expert(HOST_SYNC), **changes})}
    )
    assert report["score"] == {
        "strict": strict,
        "partial": partial,
        "points": round(result.points, 4),
        "points_total": 11.0,
        "fields_hit": hits,
        "fields_total": 7,
    }
    assert report["verdict"] == ("accepted" if strict == 1.0 else "wrong_answer")


def test_a_field_worth_two_points_costs_two_points():
    # prof-rank-imbalance: straggler_rank is worth 2 of 12 points.
    points = _points(RANKS)
    assert points["straggler_rank"] == 2.0 and sum(points.values()) == 12.0
    result = _score(RANKS, straggler_rank=0)
    assert _field(result, "straggler_rank").hit is False
    assert (result.strict, result.partial) == (0.0, round(10 / 12, 4))


def test_a_task_on_a_jax_trace_is_graded_like_a_pytorch_one():
    """The JAX profiler's Perfetto/Chrome-trace export as the task's trace: kernels
    on the GPU stream lane, evidence by position."""
    import gzip

    from graders.filetext import stored_text
    from graders.profiling.grading import grade_answer
    from graders.profiling.spec import ProfilingSpec

    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": 1,
            "tid": 3,
            "args": {"name": "Stream #13(Compute)"},
        },
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 10, "dur": 50, "name": "fusion_3"},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 70, "dur": 5, "name": "MemcpyD2H"},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 80, "dur": 9, "name": "all-reduce.1"},
        {"ph": "X", "pid": 2, "tid": 9, "ts": 0, "dur": 95, "name": "PjitFunction(step)"},
    ]
    trace = gzip.compress(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode())
    schema = {
        "type": "object",
        "properties": {"kernel": {"type": "string"}, "evidence": {"type": "array"}},
        "required": ["kernel", "evidence"],
    }
    key = {"kernel": "fusion_3", "evidence": ["ev:3"]}
    manifest = {
        "kind": "profiling",
        "grading": {
            "traces": ["trace.json.gz"],
            "schema": "schema.json",
            "key": "key.json",
            "key_script": "derive_key.py",
            "fields": {"kernel": {"type": "kernel"}, "evidence": {"type": "evidence"}},
        },
        "files": [
            {"path": "trace.json.gz", "visibility": "prompt", "role": "artifact"},
            {"path": "schema.json", "visibility": "prompt", "role": "artifact"},
            {"path": "key.json", "visibility": "hidden", "role": "other"},
            {"path": "derive_key.py", "visibility": "hidden", "role": "other"},
        ],
    }
    files = {
        "trace.json.gz": stored_text("trace.json.gz", trace),
        "schema.json": json.dumps(schema),
        "key.json": json.dumps(key),
        "derive_key.py": "print('{}')\n",
    }
    spec = ProfilingSpec.from_manifest(manifest, files)
    assert spec.loaded[0].source == "jax"
    right = grade_answer(spec, {"answer.json": json.dumps(key)})
    assert right["verdict"] == "accepted", right["reason"]
    wrong = grade_answer(
        spec, {"answer.json": json.dumps({"kernel": "fusion_3", "evidence": ["ev:5"]})}
    )
    assert wrong["verdict"] == "wrong_answer" and wrong["score"]["partial"] == 0.5
