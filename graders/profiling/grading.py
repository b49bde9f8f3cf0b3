"""Grading a profiling task of the ``answer`` form.

An answer is JSON: it is parsed and scored on the trusted side and never run,
so grading one needs no sandbox. The traces are the task's own files, loaded
here to check the events an answer cites.

What does run is the task's key script, an author's program: validation runs
it in the sandbox (no network, the usual limits) with the traces in its working
folder and the platform's trace library importable as ``graders.profiling``,
and the key it prints must equal the stored key field by field
(``check_key``). Key scripts are not run for submissions.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from graders.filetext import file_bytes
from graders.verdicts import Verdict

from .scoring import AnswerScore, score_answer
from .spec import SCORE_TOLERANCE, ProfilingSpec

LIBRARY_ROOT = Path(__file__).resolve().parents[2] / "graders"
MOUNT = "/opt/benchwright"
WORKDIR = "/work"
KEY_SCRIPT_WALL_S = 300.0
# Runs the key script as ``python derive_key.py`` would from the bundle's folder,
# with the platform's trace library importable.
BOOTSTRAP = (
    "import runpy, sys\n"
    f"sys.path.insert(0, {MOUNT!r})\n"
    "script = sys.argv[1]\n"
    "sys.argv = [script]\n"
    "runpy.run_path(script, run_name='__main__')\n"
)
NUMBER_RTOL = 1e-6  # a re-derived key's numbers against the stored ones


def grade_answer(
    spec: ProfilingSpec,
    submission_files: Mapping[str, str],
    *,
    declared_partial: float | None = None,
) -> dict[str, Any]:
    """The report of one answer. ``declared_partial``: validation of a negative
    answer, which must earn exactly the partial score its task declares."""
    started = time.monotonic()
    answer = submission_files.get(spec.answer_file)
    if answer is None:
        names = ", ".join(sorted(submission_files)) or "no files"
        result = AnswerScore(
            valid=False, error=f"no {spec.answer_file} in the submission (it has {names})"
        )
    else:
        # A lone surrogate cannot be UTF-8: kept as is, the JSON parser refuses it.
        result = score_answer(spec, answer.encode("utf-8", "surrogatepass"), spec.loaded)
    report = answer_report(result)
    if declared_partial is not None and abs(result.partial - declared_partial) > SCORE_TOLERANCE:
        report["verdict"] = Verdict.TASK_ERROR.value
        report["reason"] = (
            f"this negative declares a partial score of {declared_partial:g} and earned "
            f"{result.partial:g}: fix the declaration or the grading fields"
        )
    report["duration_s"] = round(time.monotonic() - started, 3)
    return report


def answer_report(result: AnswerScore) -> dict[str, Any]:
    if not result.valid:
        verdict = Verdict.WRONG_ANSWER
        reason = f"invalid answer: {result.error}"
    elif result.strict == 1.0:
        verdict = Verdict.ACCEPTED
        reason = f"every field is right ({result.hits}/{len(result.fields)})"
    else:
        verdict = Verdict.WRONG_ANSWER
        missed = [f.name for f in result.fields if not f.hit]
        reason = f"{len(missed)} of {len(result.fields)} fields wrong: {', '.join(missed)}"
    return {
        "kind": "profiling",
        "form": "answer",
        "verdict": verdict.value,
        "reason": reason,
        "answer_valid": result.valid,
        "answer_error": result.error,
        "score": {
            "strict": result.strict,
            "partial": result.partial,
            "points": round(result.points, 4),
            "points_total": result.points_total,
            "fields_hit": result.hits,
            "fields_total": len(result.fields),
        },
        "fields": [f.as_dict() for f in result.fields],
        "texts": dict(result.texts),
        "hardware": {"name": "cpu"},
        "operator_notes": "",
    }


def check_key(spec: ProfilingSpec, task_files: Mapping[str, str], backend: Any) -> dict[str, Any]:
    """Run the key script in the sandbox and compare the key it prints with the stored
    one: ``accepted`` when they agree, ``task_error`` (naming the fields) when not."""
    from sandboxes.base import Limits, RunRequest

    started = time.monotonic()
    files = {path: file_bytes(path, task_files[path]) for path in (*spec.traces, spec.key_script)}
    request = RunRequest(
        argv=[sys.executable, "-I", "-B", "-c", BOOTSTRAP, spec.key_script],
        limits=Limits(wall_time_s=KEY_SCRIPT_WALL_S, cpu_time_s=2 * KEY_SCRIPT_WALL_S),
        files=files,
        ro_binds=[(str(LIBRARY_ROOT), f"{MOUNT}/graders")],
        workdir=WORKDIR,
    )
    run = backend.run(request)
    logs = {
        "stdout": run.stdout.decode("utf-8", "replace"),
        "stderr": run.stderr.decode("utf-8", "replace"),
    }
    report: dict[str, Any] = {
        "kind": "profiling",
        "form": "answer",
        "hardware": {"name": "cpu"},
        "logs": logs,
        "operator_notes": "",
    }
    if run.exit_code != 0 or run.limit_exceeded:
        why = run.limit_exceeded or (
            f"exit status {run.exit_code}" if run.exit_code is not None else f"signal {run.signal}"
        )
        problem = f"the key script {spec.key_script} failed ({why}); see its stderr"
    else:
        try:
            derived = orjson.loads(run.stdout)
        except orjson.JSONDecodeError as error:
            derived, problem = None, f"the key script printed no JSON key: {error}"
        else:
            differing = key_differences(spec, derived)
            problem = (
                f"the key script's key differs from {spec.key_path} in: {', '.join(differing)}"
                if differing
                else ""
            )
            report["operator_notes"] = f"derived key: {orjson.dumps(derived).decode()[:4000]}"
    report["verdict"] = (Verdict.TASK_ERROR if problem else Verdict.ACCEPTED).value
    report["reason"] = problem or f"{spec.key_script} reproduces {spec.key_path}"
    report["duration_s"] = round(time.monotonic() - started, 3)
    return report


def key_differences(spec: ProfilingSpec, derived: Any) -> list[str]:
    """The scored fields whose derived value differs from the stored key's: numbers
    within a relative 1e-6, sets and evidence as sets, the rest exactly."""
    if not isinstance(derived, Mapping):
        return ["(the whole key: not a JSON object)"]
    differing = []
    for rule in spec.scored_fields:
        # The spec guarantees every scored field is required by the schema, so in the key.
        stored, fresh = spec.key[rule.name], derived.get(rule.name)
        if rule.type == "number":
            same = (
                isinstance(fresh, int | float)
                and not isinstance(fresh, bool)
                and math.isclose(float(fresh), float(stored), rel_tol=NUMBER_RTOL, abs_tol=1e-9)
            )
        elif rule.type in ("set", "evidence"):
            same = isinstance(fresh, list) and set(map(str, fresh)) == set(stored)
        else:
            same = fresh == stored
        if not same:
            differing.append(rule.name)
    return differing
