"""One serving grading: the reference config and the submission's, measured together.

1. Both configs go through the three gates (``check.check_config``); a
   submission whose config is refused gets ``compile_error`` with every
   problem named by flag, and nothing starts. A refused reference is the
   task's problem.
2. Two sandboxes (``engine.Engine``), one engine each, started side by side
   with the task's fixed arguments and the config's flags; the task's KV cache
   size for each. An engine that does not come up is a verdict for the
   submission (``memory_limit_exceeded`` when its sandbox hit its memory
   limit, ``runtime_error`` with the end of the engine's log otherwise).
3. A warm-up workload on each (its requests not counted), then ``runs``
   measured runs per side, interleaved (reference, submission, submission,
   reference, ...) so that a drift of the host's speed falls on both; the
   other engine is frozen during each. Run ``i`` uses the same seed on both
   sides: the same prompts, lengths and arrival times.
4. vLLM's benchmark client does the measuring, with its metric definitions:
   TTFT, TPOT (per request, (latency - TTFT) / (output tokens - 1)), ITL
   (gaps between streamed chunks, pooled), E2EL, their percentiles,
   throughput, and goodput (requests meeting every SLO, per second of the
   run). SLO attainment is the share of the run's requests meeting every SLO.
5. Score, for a task whose objective is ``goodput``: the median goodput of
   the submission's runs over the reference's, with a conservative interval
   from each side's bootstrap interval of its median; the difference is
   ``significant`` only when the two sides' intervals separate.

   For ``max_rate``, steps 3-4 climb the task's ladder of request rates: at
   each rate ``runs`` interleaved runs per side, the same seeds on both, each as
   long in arrival time as the workload's own (``requests_at``); a side
   whose median SLO attainment falls below the task's share stops climbing
   (queues only grow with the rate). Each side's highest sustainable rate lies
   between the last rate it sustained and the first it did not; its estimate
   interpolates the attainment linearly between the two. The score is the
   submission's estimate over the reference's, its interval the ratio of the
   two brackets, significant when the brackets do not overlap. Every rate's
   figures are kept (``Side.points``) for the chart. Once the submission's
   verdict is settled as an error (its engine died, or a run failed more than
   1 % of its requests), the climb ends after the rate being measured: the
   reference's rest of the ladder could not change the verdict, and
   measuring it took minutes. ``ServingResult.stopped`` says so.

Verdicts: ``accepted`` when the submission's engine served the workload with
at most 1 % of requests failed and its median SLO attainment reaches the
task's (for ``max_rate``: at the ladder's first rate, at least);
``wrong_answer`` when it served but missed the SLO; ``runtime_error``
when it failed more than 1 % of requests (rejected ones included: a
``max_model_len`` too short for the prompts) or died mid-run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graders import stats
from graders.verdicts import Verdict
from sandboxes.base import Sandbox

from .check import check_configs
from .devices import platform_flags
from .engine import Engine, EngineError, EngineTimeout, StartResult
from .flags import FlagError, number_text, to_argv
from .spec import ServingSpec, Workload

MAX_FAILED_SHARE = 0.01
WARMUP_SEED = 10_000  # added to the workload's seed: prompts no measured run sends
LENGTHS_FILE = "prompts.jsonl"  # in the engine sandbox's working folder
PERCENTILES = "50,90,99"
RUN_KEYS = (
    "completed",
    "failed",
    "duration",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_input_tokens",
    "total_output_tokens",
)
LATENCY_KEYS = tuple(
    f"{stat}_{metric}_ms"
    for metric in ("ttft", "tpot", "itl", "e2el")
    for stat in ("mean", "median", "p90", "p99")
)
METRIC_SEMANTICS = {
    "client": "vllm.benchmarks.serve (vLLM 0.32.0)",
    "ttft": "time from sending the request to the first streamed token",
    "tpot": "per request: (latency - ttft) / (output tokens - 1); percentiles over requests",
    "itl": "gaps between successive streamed chunks, pooled over requests",
    "e2el": "time from sending the request to its last token",
    "goodput": "requests meeting every SLO, per second of the run",
    "attainment": "share of the run's requests meeting every SLO",
}


@dataclass
class Run:
    """One measured run of one side: vLLM's figures, and what they imply."""

    index: int
    seed: int
    figures: dict[str, float]
    attainment: float
    failed_share: float
    rate: float = 0.0  # the requests per second it was sent at


@dataclass
class Point:
    """One rate of a side's climb (``max_rate``): its runs' medians."""

    rate: float
    attainment: float
    goodput: float
    p90_ttft_ms: float | None
    p90_tpot_ms: float | None
    sustained: bool


@dataclass
class Side:
    role: str
    flags: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)  # vLLM's resolved settings
    ready_s: float | None = None
    runs: list[Run] = field(default_factory=list)
    error: str = ""
    # refused | start | memory | died | timeout | tokens | failed_requests
    error_kind: str = ""
    log: str = ""
    points: list[Point] = field(default_factory=list)  # max_rate: per rate climbed
    max_rate: float | None = None  # max_rate: the estimate, requests per second
    # max_rate: the last rate sustained and the first not (inf: none failed)
    max_rate_bracket: tuple[float, float] | None = None

    def median(self, key: str, rate: float | None = None) -> float | None:
        values = [run.figures.get(key) for run in self.runs if rate is None or run.rate == rate]
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        return stats.median(numbers) if numbers else None


@dataclass
class ServingResult:
    verdict: str
    reason: str
    reference: Side
    submission: Side
    config_errors: list[str] = field(default_factory=list)
    objective: str = "goodput"
    slo: dict[str, float | None] = field(default_factory=dict)  # the task's, as measured
    goodput_ratio: float | None = None
    goodput_ratio_ci: tuple[float, float] | None = None
    rate_ratio: float | None = None  # max_rate: the submission's estimate over the reference's
    rate_ratio_ci: tuple[float, float] | None = None
    significant: bool = False
    attainment: float | None = None  # the submission's median
    stopped: str = ""  # max_rate: why the climb ended before the ladder's top, if it did
    phases_s: dict[str, float] = field(default_factory=dict)
    semantics: dict[str, str] = field(default_factory=lambda: dict(METRIC_SEMANTICS))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def workload_args(
    workload: Workload, spec: ServingSpec, *, seed: int, requests: int, rate: float | None = None
) -> list[str]:
    """vLLM ``bench serve`` arguments for one run of the task's workload."""
    if workload.dataset == "random":
        data = [
            "--dataset-name", "random",
            "--random-input-len", str(workload.input_len),
            "--random-output-len", str(workload.output_len),
            "--random-range-ratio", str(workload.range_ratio),
        ]  # fmt: skip
    elif workload.dataset == "prefix":
        data = [
            "--dataset-name", "prefix_repetition",
            "--prefix-repetition-prefix-len", str(workload.prefix_len),
            "--prefix-repetition-suffix-len", str(workload.input_len),
            "--prefix-repetition-num-prefixes", str(workload.prefixes),
            "--prefix-repetition-output-len", str(workload.output_len),
        ]  # fmt: skip
    else:  # lengths: prompts of the file's lengths, written by the driver (length_prompts)
        data = [
            "--dataset-name", "custom",
            "--dataset-path", LENGTHS_FILE,
            "--custom-output-len", "-1",
            "--skip-chat-template",
        ]  # fmt: skip
    return [
        *data,
        "--num-prompts", str(requests),
        "--request-rate", number_text(workload.rate if rate is None else rate),
        "--burstiness", str(workload.burstiness),
        "--seed", str(seed),
        *(["--ignore-eos"] if workload.ignore_eos else []),
        "--goodput", *spec.slo.goodput_args(),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", PERCENTILES,
        "--temperature", "0",
    ]  # fmt: skip


def length_prompts(workload: Workload, *, seed: int, requests: int) -> dict[str, Any] | None:
    """For a length-distribution workload, what the driver needs to write a run's prompts
    (``driver.write_length_prompts``): the file's rows, drawn by the run's seed, each
    prompt exactly its input length in the model's tokenizer. None for other datasets."""
    if workload.dataset != "lengths":
        return None
    rows = [list(row) for row in workload.length_rows]
    return {"rows": rows, "requests": requests, "seed": seed, "path": LENGTHS_FILE}


def _run_of(reply: Mapping[str, Any], index: int, seed: int, requests: int, rate: float) -> Run:
    result = reply.get("result") or {}
    keys = (*RUN_KEYS, *LATENCY_KEYS)
    figures = {k: float(result[k]) for k in keys if isinstance(result.get(k), int | float)}
    duration = figures.get("duration") or 0.0
    good = figures.get("request_goodput", 0.0) * duration
    failed = figures.get("failed", 0.0)
    return Run(
        index=index,
        seed=seed,
        figures=figures,
        attainment=round(good / requests, 4) if requests else 0.0,
        failed_share=failed / requests if requests else 0.0,
        rate=rate,
    )


def _start(engine: Engine, side: Side, argv: list[str], timeout_s: float) -> StartResult:
    started = engine.start(argv, timeout_s)
    side.ready_s = started.ready_s
    if not started.ready:
        side.error_kind, side.log = "start", started.log[-4000:]
        side.error = (
            f"the engine exited with status {started.exit_code} before it was ready"
            if started.exit_code is not None
            else f"the engine was not ready within {timeout_s:g} s"
        )
    return started


def grade_serving(
    spec: ServingSpec,
    reference_config: Mapping[str, Any],
    submission_config: Mapping[str, Any],
    *,
    model_dir: Path,
    backend: Sandbox,
    gpus: tuple[int, ...] = (),
) -> ServingResult:
    """Measure both configs (see the module's docstring) and decide the verdict."""
    phases: dict[str, float] = {}
    began = time.monotonic()
    reference, submission = Side("reference"), Side("submission")
    checked = check_configs(
        [reference_config, submission_config],
        spec.policy,
        fixed={**spec.fixed, **platform_flags(spec, gpus)},
        model_dir=model_dir,
        gpus=len(gpus),
        kv_cache_bytes=spec.kv_cache_bytes,
    )
    checks = {"reference": checked[0], "submission": checked[1]}
    for side, check in zip((reference, submission), checked, strict=True):
        side.flags, side.engine = check.flags, check.engine
    phases["config_check"] = round(time.monotonic() - began, 3)
    result = ServingResult(
        "",
        "",
        reference,
        submission,
        objective=spec.objective,
        slo=asdict(spec.slo),
        phases_s=phases,
    )
    if not checks["reference"].ok:
        return _task_error(
            result, "the reference config is refused: " + _listed(checks["reference"].errors)
        )
    if not checks["submission"].ok:
        result.config_errors = [str(e) for e in checks["submission"].errors]
        result.verdict = Verdict.COMPILE_ERROR.value
        result.reason = "the engine config is refused: " + _listed(checks["submission"].errors)
        return result
    engines = [Engine(side.role, backend, model_dir, gpus=gpus) for side in (reference, submission)]
    try:
        _measure(spec, engines, result, gpus)
    except EngineError as exc:
        result.verdict, result.reason = Verdict.INTERNAL_ERROR.value, str(exc)
        return result
    finally:
        teardown = time.monotonic()
        for engine, side in zip(engines, (reference, submission), strict=True):
            ended = engine.close()
            if ended is not None and ended.memory_limit_hit and side.error_kind:
                side.error_kind = "memory"
                side.error = "the engine ran out of its sandbox's memory limit"
        phases["teardown"] = round(time.monotonic() - teardown, 3)
    return _decide(result, spec)


def _measure(
    spec: ServingSpec,
    engines: list[Engine],
    result: ServingResult,
    gpus: tuple[int, ...] = (),
) -> None:
    workload = spec.workload
    sides, phases = (result.reference, result.submission), result.phases_s
    began = time.monotonic()
    for engine in engines:
        engine.open()
    # The task's and the platform's arguments last: where a flag came twice, vLLM's parser
    # keeps the last, so nothing a solver writes undoes them.
    fixed = to_argv({**spec.fixed, **platform_flags(spec, gpus)})
    with ThreadPoolExecutor(max_workers=2) as pool:
        starts = [
            pool.submit(
                _start, engine, side, [*to_argv(side.flags), *fixed], spec.startup_timeout_s
            )
            for engine, side in zip(engines, sides, strict=True)
        ]
        ready = [future.result().ready for future in starts]
    phases["engine_start"] = round(time.monotonic() - began, 3)
    if not all(ready):
        return
    began = time.monotonic()
    if workload.warmup:
        seed = workload.seed + WARMUP_SEED
        for index, engine in enumerate(engines):
            other = engines[1 - index]
            timeout_s = _bench_timeout(workload.warmup, workload.rate)
            with other.paused():
                try:
                    engine.bench(
                        workload_args(workload, spec, seed=seed, requests=workload.warmup),
                        timeout_s=timeout_s,
                        lengths=length_prompts(workload, seed=seed, requests=workload.warmup),
                    )
                except EngineTimeout:
                    _timed_out(sides[index], "the warm-up", timeout_s)
    phases["warmup"] = round(time.monotonic() - began, 3)
    began = time.monotonic()
    climbing = [True, True]
    for rung, rate in enumerate(spec.rates):
        for run in range(spec.runs):
            order = (0, 1) if run % 2 == 0 else (1, 0)
            seed = run_seed(workload, rung, run)
            for index in order:
                if climbing[index] and not sides[index].error_kind:
                    _one_run(spec, engines, sides, index, run, seed, rate)
        if spec.objective == "max_rate":
            for index, side in enumerate(sides):
                if climbing[index] and not side.error_kind:
                    side.points.append(_point(side, rate, spec.slo.attainment))
                    climbing[index] = side.points[-1].sustained
            if not any(climbing):
                break
            stopped = _settled(sides[1])
            if stopped and rung + 1 < len(spec.rates):
                result.stopped = f"the climb ended at {number_text(rate)} requests/s: {stopped}"
                break
    phases["workload"] = round(time.monotonic() - began, 3)


def _settled(submission: Side) -> str:
    """Why the submission's verdict can no longer change (an error, or no rate met), or
    ''."""
    if submission.error_kind:
        return "the submission's engine failed"
    if any(run.failed_share > MAX_FAILED_SHARE for run in submission.runs):
        return "the submission failed more than 1% of a run's requests"
    if submission.points and not submission.points[0].sustained:
        return "the submission met the SLOs at none of the task's rates"
    return ""


def _one_run(
    spec: ServingSpec,
    engines: list[Engine],
    sides: tuple[Side, Side],
    index: int,
    run: int,
    seed: int,
    rate: float,
) -> None:
    """One measured run of one side at ``rate``, the other engine frozen."""
    workload = spec.workload
    engine, side, other = engines[index], sides[index], engines[1 - index]
    requests = requests_at(workload, rate)
    timeout_s = _bench_timeout(requests, rate)
    with other.paused():
        try:
            reply = engine.bench(
                workload_args(workload, spec, seed=seed, requests=requests, rate=rate),
                timeout_s=timeout_s,
                lengths=length_prompts(workload, seed=seed, requests=requests),
            )
        except EngineTimeout:
            _timed_out(side, f"run {run} at {number_text(rate)} requests/s", timeout_s)
            return
    if not reply.get("engine_alive"):
        side.error_kind, side.log = "died", str(reply.get("log") or "")[-4000:]
        side.error = f"the engine stopped during run {run} at {number_text(rate)} requests/s"
        return
    measured = _run_of(reply, run, seed, requests, rate)
    short = _short_of_tokens(workload, measured, requests)
    if short:
        side.error_kind, side.error = "tokens", short
    side.runs.append(measured)


def run_seed(workload: Workload, rung: int, run: int) -> int:
    """The seed of run ``run`` at the ``rung``-th rate: the same for both sides (the
    same prompts and arrival times), and never one an engine has served before in the
    grading (vLLM's datasets send a seed's prompts again from the start, which a prefix
    cache would answer without prefill)."""
    return workload.seed + 100 * rung + run


def _timed_out(side: Side, what: str, timeout_s: float) -> None:
    side.error_kind = "timeout"
    side.error = f"{what} did not finish in {timeout_s:.0f} s: the engine serves too slowly"


def _short_of_tokens(workload: Workload, run: Run, requests: int) -> str:
    """Why a run did not do the work the workload asks for ("" when it did): with
    ``ignore_eos`` every completed request gets exactly its output length, so an engine
    answering with fewer tokens (capped by some setting) has skipped work it is timed on."""
    if not workload.ignore_eos or run.figures.get("failed", 0.0):
        return ""
    expected = expected_output_tokens(workload, requests)
    got = run.figures.get("total_output_tokens")
    if expected is None or got is None or int(got) == expected:
        return ""
    return (
        f"run {run.index} at {number_text(run.rate)} requests/s returned {int(got)} output "
        f"tokens where the workload asks for {expected}"
    )


def expected_output_tokens(workload: Workload, requests: int) -> int | None:
    """How many output tokens ``requests`` requests of the workload ask for, where that
    is known before the run (fixed output lengths); None where lengths vary."""
    if workload.dataset == "prefix" or (workload.dataset == "random" and workload.range_ratio == 0):
        return requests * workload.output_len
    return None


def requests_at(workload: Workload, rate: float) -> int:
    """How many requests a run at ``rate`` sends: as many as arrive in the time the
    workload's own ``requests`` take at its ``rate``. A short burst at a high rate
    would be absorbed by the queue and pass for sustainable; a run of the same length
    at every rate lets the queue build as it would."""
    return max(workload.requests, math.ceil(workload.requests * rate / workload.rate))


def _point(side: Side, rate: float, wanted: float) -> Point:
    runs = [run for run in side.runs if run.rate == rate]
    attainment = stats.median([run.attainment for run in runs]) if runs else 0.0
    return Point(
        rate=rate,
        attainment=attainment,
        goodput=side.median("request_goodput", rate) or 0.0,
        p90_ttft_ms=side.median("p90_ttft_ms", rate),
        p90_tpot_ms=side.median("p90_tpot_ms", rate),
        sustained=bool(runs) and attainment >= wanted,
    )


def _bench_timeout(requests: int, rate: float) -> float:
    """Arrivals take requests / rate seconds; the rest is the engine's to finish."""
    return 120.0 + 4.0 * requests / rate


def _decide(result: ServingResult, spec: ServingSpec) -> ServingResult:
    reference, submission = result.reference, result.submission
    if reference.error_kind:
        return _task_error(result, f"the reference engine failed: {reference.error}")
    ref_failed = max((run.failed_share for run in reference.runs), default=0.0)
    if ref_failed > MAX_FAILED_SHARE:
        return _task_error(result, f"the reference failed {ref_failed:.1%} of its requests")
    if submission.error_kind:
        verdict = {
            "memory": Verdict.MEMORY_LIMIT_EXCEEDED,
            "timeout": Verdict.TIME_LIMIT_EXCEEDED,
        }.get(submission.error_kind, Verdict.RUNTIME_ERROR)
        result.verdict, result.reason = verdict.value, _with_stop(submission.error, result)
        return result
    failed = max((run.failed_share for run in submission.runs), default=1.0)
    if spec.objective == "max_rate":
        if not sustainable_rate(reference, spec.slo.attainment):
            return _task_error(
                result,
                "the reference config meets the SLOs at none of the task's rates "
                f"(the first is {number_text(spec.rates[0])} requests/s)",
            )
        sustainable_rate(submission, spec.slo.attainment)
        _score_rates(result)
    else:
        _score(result)
    if failed > MAX_FAILED_SHARE:
        submission.error_kind = "failed_requests"
        result.verdict = Verdict.RUNTIME_ERROR.value
        result.reason = _with_stop(
            f"the engine failed {failed:.1%} of the requests of a run (at most "
            f"{MAX_FAILED_SHARE:.0%} allowed): it rejects or drops part of the workload",
            result,
        )
        return result
    attainment = result.attainment or 0.0
    wanted = spec.slo.attainment
    ratio = (
        f"goodput x{result.goodput_ratio:.3g} of the reference's" if result.goodput_ratio else ""
    )
    if spec.objective == "max_rate":
        return _decide_rates(result, spec)
    if attainment >= wanted:
        result.verdict = Verdict.ACCEPTED.value
        result.reason = f"meets the SLOs for {attainment:.0%} of requests; {ratio}"
    else:
        result.verdict = Verdict.WRONG_ANSWER.value
        result.reason = (
            f"meets the SLOs for {attainment:.0%} of requests, {wanted:.0%} wanted; {ratio}"
        )
    return result


def _score(result: ServingResult) -> None:
    ref = [run.figures.get("request_goodput", 0.0) for run in result.reference.runs]
    sub = [run.figures.get("request_goodput", 0.0) for run in result.submission.runs]
    result.attainment = stats.median([run.attainment for run in result.submission.runs])
    if not ref or not sub:
        return
    ref_median, sub_median = stats.median(ref), stats.median(sub)
    ref_ci = stats.bootstrap_median_ci(ref, seed=1)
    sub_ci = stats.bootstrap_median_ci(sub, seed=2)
    if ref_median > 0:
        result.goodput_ratio = round(sub_median / ref_median, 4)
        low, high = stats.ratio_interval(sub_ci, ref_ci)
        result.goodput_ratio_ci = (round(low, 4), round(high, 4) if math.isfinite(high) else high)
    result.significant = stats.intervals_separate(ref_ci, sub_ci)


def sustainable_rate(side: Side, wanted: float) -> bool:
    """A side's highest sustainable rate from its points; False if it sustained none."""
    sustained = [point for point in side.points if point.sustained]
    if not sustained:
        return False
    last = sustained[-1]
    failed = next((p for p in side.points if not p.sustained and p.rate > last.rate), None)
    if failed is None:
        side.max_rate, side.max_rate_bracket = last.rate, (last.rate, math.inf)
        return True
    # Attainment falls from last.attainment (>= wanted) to failed.attainment (< wanted)
    # between the two rates: where it crosses the wanted share, linearly.
    drop = last.attainment - failed.attainment
    share = (last.attainment - wanted) / drop if drop > 0 else 0.0
    side.max_rate = round(last.rate + share * (failed.rate - last.rate), 4)
    side.max_rate_bracket = (last.rate, failed.rate)
    return True


def _score_rates(result: ServingResult) -> None:
    reference, submission = result.reference, result.submission
    sustained = [p for p in submission.points if p.sustained]
    first = submission.points[0] if submission.points else None
    result.attainment = (sustained[-1] if sustained else first).attainment if first else None
    if not (reference.max_rate and submission.max_rate):
        return
    ref_bracket = reference.max_rate_bracket or (reference.max_rate, reference.max_rate)
    sub_bracket = submission.max_rate_bracket or (submission.max_rate, submission.max_rate)
    result.rate_ratio = round(submission.max_rate / reference.max_rate, 4)
    low, high = stats.ratio_interval(sub_bracket, ref_bracket)
    result.rate_ratio_ci = (round(low, 4), round(high, 4) if math.isfinite(high) else high)
    # Brackets are half-open: [last sustained, first not). Touching ones do not overlap.
    result.significant = sub_bracket[0] >= ref_bracket[1] or ref_bracket[0] >= sub_bracket[1]


def _decide_rates(result: ServingResult, spec: ServingSpec) -> ServingResult:
    submission = result.submission
    if submission.max_rate is None:
        first = submission.points[0] if submission.points else None
        result.verdict = Verdict.WRONG_ANSWER.value
        result.reason = _with_stop(
            f"meets the SLOs at none of the task's rates: {first.attainment:.0%} of requests "
            f"at {number_text(first.rate)} requests/s, {spec.slo.attainment:.0%} wanted"
            if first
            else "no rate was measured",
            result,
        )
        return result
    ratio = f"x{result.rate_ratio:.3g} of the reference's" if result.rate_ratio else ""
    result.verdict = Verdict.ACCEPTED.value
    result.reason = (
        f"sustains about {number_text(round(submission.max_rate, 2))} requests/s within the "
        f"SLOs; {ratio}"
    )
    return result


def _with_stop(reason: str, result: ServingResult) -> str:
    return f"{reason} ({result.stopped})" if result.stopped else reason


def _task_error(result: ServingResult, reason: str) -> ServingResult:
    result.verdict, result.reason = Verdict.TASK_ERROR.value, reason
    return result


def _listed(errors: list[FlagError]) -> str:
    return "; ".join(str(e) for e in errors[:10])
