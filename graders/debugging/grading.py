"""Grading a fix: run the task's tests on the fixed tree and on the expert fix's,
in the sandbox, and decide every test outside it.

1. The fix is checked and applied on the trusted side (``fix.apply_fix``); the
   tests are not in the tree it is applied to, and reach the sandbox only with
   the fixed tree.
2. A secret seed is drawn. The tests run in one sandboxed runner process per
   side (``runner/main.py``), one command per test with the task's per-test
   time limit; a test that hangs, crashes or garbles the channel ends that
   process, and the rest of the tests go on in a new one. A test with a
   peak-memory budget runs alone, so that its sandbox's peak (read from the
   cgroup, outside) is its own. Every sandbox whose output is public (a
   visible test's) runs before any sandbox that holds a hidden test file.
3. A test passes when the expert fix's run returned a value, the fix's run
   returned a value equal to it within the task's per-dtype tolerances (NaN
   and infinities exactly), inside the time limit, and, where the task says
   so, within its memory budget over the expert's peak. The fix's reply to a
   test may hold twice the expert's and 4 MiB more (a larger one is a crashed
   test), and is let go once judged. What a test "says"
   inside its process (an assert that passed, a skip, an exit code of 0)
   counts for nothing: the code under test can forge any of it.
4. Resolved: every FAIL_TO_PASS and every PASS_TO_PASS test passes.

For validation the grader can also check the unchanged tree (``baseline``:
every FAIL_TO_PASS test must fail and every PASS_TO_PASS test pass) and run
each side several times on fresh seeds (``repeat``), reporting a test whose
outcome changes as flaky.
"""

from __future__ import annotations

import dataclasses
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.contract import tail
from graders.kernel.compare import compare_outputs
from graders.kernel.harness.protocol import ProtocolError, unpack_tree
from graders.kernel.side import Side, SideFailure, clean_text
from graders.kernel.spec import Tolerance
from graders.reports import storable
from graders.verdicts import Verdict
from sandboxes.base import Limits, RunRequest, Sandbox, SandboxError, python_env

from .fix import AppliedFix, FixRefused, apply_fix
from .spec import DebugSpec, TestId

RUNNER_DIR = Path(__file__).resolve().parent / "runner"
HARNESS_DIR = Path(__file__).resolve().parent.parent / "kernel" / "harness"
MOUNT = "/opt/benchwright"
WORKDIR = "/work"
BOOTSTRAP = f"import sys; sys.path.insert(0, {MOUNT!r}); from runner.main import main; main()"
STARTUP_TIMEOUT_S = 120.0
REPLY_CAP = 256 * 1024 * 1024
REPLY_ROOM = 4 * 1024 * 1024  # over twice the expert's reply: output text, framing
OUTPUT_CHARS = 4000
MiB = 1024 * 1024

# A failing test's outcome, and the verdict it stands for when it decides a grading
# (most telling first).
# An exit before a test returned comes first: no timeout elsewhere may hide it.
OUTCOME_VERDICTS = (
    ("exited", Verdict.INTEGRITY_VIOLATION),
    ("timeout", Verdict.TIME_LIMIT_EXCEEDED),
    ("memory", Verdict.MEMORY_LIMIT_EXCEEDED),
    ("crashed", Verdict.RUNTIME_ERROR),
    ("raised", Verdict.RUNTIME_ERROR),
    ("failed", Verdict.WRONG_ANSWER),
    ("mismatch", Verdict.WRONG_ANSWER),
)


@dataclass
class SideRun:
    """One test on one side, as the sandbox and the runner's reply showed it."""

    status: str  # returned | raised | timeout | crashed | exited | memory | garbled
    value_node: Any = None
    value: Any = None
    error: dict[str, str] = field(default_factory=dict)
    output: str = ""
    seconds: float = 0.0
    peak_bytes: int | None = None
    message: str = ""
    reply_bytes: int = 0


@dataclass
class TestOutcome:
    test: TestId
    group: str
    visible: bool
    outcome: str  # passed | mismatch | failed | raised | timeout | crashed | exited | memory
    message: str  # may quote the expert's values: for operators and visible tests only
    seconds: float
    output: str

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.test.id,
            "group": self.group,
            "visible": self.visible,
            "outcome": self.outcome,
            "message": self.message,
            "seconds": round(self.seconds, 3),
            "output": self.output,
        }


class TaskProblem(Exception):
    """The task's own expert fix or tests failed: a task_error, never the solver's."""


# Peak memory should be what a tree's code holds, not how glibc's heap fragments:
# with its adaptive mapping threshold, blocks of a MiB or so come from the heap,
# and a fix that keeps small tensors alive between them (one loss per example)
# pinned freed space and peaked 100-130 MiB above the expert fix's while holding
# under 1 MiB more. A fixed 128 KiB threshold maps every large block on its own
# and unmaps it when freed; the same fix then peaks where the expert fix does.
MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": "131072",
    "MALLOC_TRIM_THRESHOLD_": "131072",
}


def _env(spec: DebugSpec) -> dict[str, str]:
    return {
        **python_env(WORKDIR),
        **MALLOC_ENV,
        "TRITON_INTERPRET": "1",
        "TRITON_CACHE_DIR": f"{WORKDIR}/.triton",
        "TRITON_HOME": WORKDIR,
    }


class TestRunner:
    """Runs tests of one tree in sandboxed runner processes."""

    def __init__(self, spec: DebugSpec, backend: Sandbox, role: str) -> None:
        self.spec = spec
        self.backend = backend
        self.role = role
        self.processes = 0
        self.startup_s = 0.0

    def _request(self, tree: Mapping[str, str], tests: list[TestId]) -> RunRequest:
        """A runner sandbox for ``tests``: the tree and only the test files they need.
        Hidden test files never share a sandbox with a visible test, whose output the
        solver reads."""
        limits: Limits = self.spec.effective_limits()
        wall = min(
            limits.wall_time_s,
            STARTUP_TIMEOUT_S + len(tests) * (self.spec.test_timeout_s + 5.0),
        )
        visible_only = all(self.spec.is_visible(test) for test in tests)
        test_files = {
            path: text
            for path, text in self.spec.tests.items()
            if not visible_only or path in self.spec.visible_tests
        }
        files = {
            f"repo/{path}": text.encode("utf-8", "surrogatepass")
            for path, text in {**tree, **test_files}.items()
        }
        return RunRequest(
            argv=[sys.executable, "-I", "-B", "-c", BOOTSTRAP],
            limits=dataclasses.replace(limits, wall_time_s=wall),
            files=files,
            env=_env(self.spec),
            ro_binds=[
                (str(RUNNER_DIR), f"{MOUNT}/runner"),
                (str(HARNESS_DIR), f"{MOUNT}/harness"),
            ],
            workdir=WORKDIR,
            network=self.spec.network,
        )

    def run(
        self,
        tree: Mapping[str, str],
        tests: list[TestId],
        seeds: tuple[int, int],
        *,
        caps: Mapping[str, int] | None = None,
        done: Callable[[TestId, SideRun], None] | None = None,
    ) -> dict[str, SideRun]:
        """Every test's run: the visible tests in processes of their own (on the first
        seed), the hidden ones in others (on the second), and each test with a memory
        budget alone, so that its sandbox's peak is its own.

        Every sandbox whose output is public (a visible test's) runs before any that
        holds a hidden test file: what a hidden test's sandbox leaves on the host
        (pages it pulled into the page cache, say) has no public reader left in this
        grading. ``caps`` bounds each test's reply in bytes; ``done`` is called with
        each run once its sandbox has ended (its value may then be dropped)."""
        measured = {t for t in tests if t.id in self.spec.peak_memory_mib}
        runs: dict[str, SideRun] = {}
        for visible in (True, False):
            group = [t for t in tests if self.spec.is_visible(t) == visible]
            seed = seeds[0] if visible else seeds[1]
            batches = [[t for t in group if t not in measured]]
            batches += [[t] for t in group if t in measured]
            for batch in batches:
                if not batch:
                    continue
                made = self._run_batch(tree, batch, seed, measure=batch[0] in measured, caps=caps)
                runs.update(made)
                for test in batch:
                    if done is not None:
                        done(test, made[test.id])
        return runs

    def _run_batch(
        self,
        tree: Mapping[str, str],
        tests: list[TestId],
        seed: int,
        *,
        measure: bool = False,
        caps: Mapping[str, int] | None = None,
    ) -> dict[str, SideRun]:
        runs: dict[str, SideRun] = {}
        pending = list(tests)
        while pending:
            self.processes += 1
            began = time.monotonic()
            side = Side.start(self.role, self.backend, self._request(tree, pending))
            try:
                broken = self._serve(side, pending, seed, runs, began, caps or {})
            finally:
                result = side.finish()  # whatever happened: the sandbox is released
            if broken is not None:
                _explain(broken, result)
            if measure:
                runs[tests[0].id].peak_bytes = result.memory_peak_bytes
        return runs

    def _serve(
        self,
        side: Side,
        pending: list[TestId],
        seed: int,
        runs: dict[str, SideRun],
        began: float,
        caps: Mapping[str, int],
    ) -> SideRun | None:
        """Run pending tests in one started runner until they are done or one breaks
        the process (which is returned, the rest left pending)."""
        try:
            side.await_reply("hello", STARTUP_TIMEOUT_S)
        except SideFailure as failure:
            side.kill()
            raise SandboxError(
                f"the {self.role} test runner did not start ({failure.message})"
            ) from None
        self.startup_s += time.monotonic() - began
        while pending:
            test = pending.pop(0)
            run = runs[test.id] = self._one(side, test, seed, caps.get(test.id, REPLY_CAP))
            if run.status == "garbled":  # its channel cannot be trusted to say more
                side.kill()
            if run.status not in ("returned", "raised"):
                return run
        return None

    def _one(self, side: Side, test: TestId, seed: int, cap: int) -> SideRun:
        started = time.monotonic()
        header = {"module": test.module, "function": test.function, "seed": seed}
        try:
            reply = side.request("test", header, timeout_s=self.spec.test_timeout_s, max_bytes=cap)
        except SideFailure as failure:
            status = {"timeout": "timeout", "gone": "crashed"}.get(failure.kind, "garbled")
            if status != "crashed":  # one that ended on its own is left to report how
                side.kill()
            return SideRun(status, seconds=time.monotonic() - started, message=failure.message)
        seconds = reply.elapsed_s
        output = clean_text(reply.header.get("output", ""), OUTPUT_CHARS)
        raised = reply.header.get("raised")
        if raised is not None:
            from graders.kernel.side import clean_error

            return SideRun("raised", error=clean_error(raised), output=output, seconds=seconds)
        node = reply.header.get("value")
        try:
            value = unpack_tree(node, reply.blobs)
        except (ProtocolError, RuntimeError, ValueError, MemoryError) as error:
            return SideRun(
                "garbled",
                output=output,
                seconds=seconds,
                message=f"its value is malformed: {error}",
            )
        return SideRun(
            "returned", node, value, output=output, seconds=seconds, reply_bytes=reply.size
        )


def reply_caps(expert_runs: Mapping[str, SideRun]) -> dict[str, int]:
    """How many bytes the fix's reply to each test may hold: a value equal to the
    expert fix's is about as large, so twice its reply and some room for the output
    text is plenty; a larger reply is a crashed test, never held in the grader's
    memory (every test answering near ``REPLY_CAP`` took gigabytes)."""
    return {
        test: min(REPLY_CAP, 2 * run.reply_bytes + REPLY_ROOM)
        for test, run in expert_runs.items()
        if run.status == "returned"
    }


def _explain(run: SideRun, result: Any) -> None:
    """Name what ended a runner process, from what the sandbox saw."""
    if result.memory_limit_hit and run.status != "timeout":
        run.status = "memory"
        run.message = "the test's process ran out of its memory limit"
    elif run.status == "crashed" and result.exit_code == 0 and result.signal is None:
        run.status = "exited"
        run.message = "the test's process exited with status 0 before the test returned"
    elif run.status == "crashed":
        how = (
            f"signal {result.signal}" if result.signal is not None else f"status {result.exit_code}"
        )
        run.message = f"the test's process ended ({how}) before the test returned"
    elif run.status == "timeout":
        run.message = "the test did not finish within its time limit"
    stderr = result.stderr.decode("utf-8", "replace")
    run.output = clean_text((run.output + "\n" + stderr).strip(), OUTPUT_CHARS)


def _tolerance(spec: DebugSpec) -> Any:
    def tolerance_for(dtype: str) -> Tolerance:
        atol, rtol = spec.tolerances.get(dtype, (0.0, 0.0))
        return Tolerance(atol, rtol)

    return tolerance_for


def judge(spec: DebugSpec, test: TestId, expert: SideRun, fixed: SideRun) -> TestOutcome:
    """One test's outcome for the fix, decided here from both sides' runs."""
    if expert.status != "returned":
        detail = expert.error.get("message") or expert.message or expert.status
        raise TaskProblem(f"the expert fix does not pass {test.id}: {expert.status}: {detail}")
    if expert.value is None:
        raise TaskProblem(
            f"{test.id} returns nothing: a test must return the values it checks, so that "
            "they can be compared outside the process that made them"
        )
    outcome, message = "passed", ""
    if fixed.status == "raised":
        kind = fixed.error.get("type", "")
        outcome = "failed" if kind == "AssertionError" else "raised"
        message = f"{kind}: {fixed.error.get('message', '')}"
    elif fixed.status != "returned":
        outcome = "crashed" if fixed.status == "garbled" else fixed.status
        message = fixed.message
    else:
        comparison = compare_outputs(
            expert.value_node, expert.value, fixed.value_node, fixed.value, _tolerance(spec)
        )
        if not comparison.ok or comparison.integrity:
            outcome = "mismatch"
            message = comparison.integrity or comparison.message
        elif test.id in spec.peak_memory_mib:
            outcome, message = _memory(spec, test, expert, fixed)
    return TestOutcome(
        test=test,
        group=spec.group(test),
        visible=spec.is_visible(test),
        outcome=outcome,
        message=clean_text(message, 2000),
        seconds=fixed.seconds,
        output=fixed.output,
    )


def _memory(spec: DebugSpec, test: TestId, expert: SideRun, fixed: SideRun) -> tuple[str, str]:
    if expert.peak_bytes is None or fixed.peak_bytes is None:
        raise SandboxError("this host's sandbox cannot measure peak memory")
    over = (fixed.peak_bytes - expert.peak_bytes) / MiB
    budget = spec.peak_memory_mib[test.id]
    if over > budget:
        return "memory", (
            f"peak memory {fixed.peak_bytes / MiB:.0f} MiB, {over:.0f} MiB over the expert fix's "
            f"(at most {budget:.0f} MiB over)"
        )
    return "passed", ""


@dataclass
class Grading:
    spec: DebugSpec
    backend: Sandbox
    baseline: bool = False
    repeat: int = 1
    phases: dict[str, float] = field(default_factory=dict)

    def run(self, submission: Mapping[str, str], task_files: Mapping[str, str]) -> dict[str, Any]:
        started = time.monotonic()
        report: dict[str, Any] = {"hardware": {"name": "cpu"}, "kind": "debugging"}
        try:
            report.update(self._grade(submission, task_files))
        except FixRefused as refused:
            report.update(verdict=refused.verdict.value, reason=refused.reason)
        except TaskProblem as problem:
            report.update(
                verdict=Verdict.TASK_ERROR.value,
                reason="the task's expert fix or tests failed; operators were told",
                operator_notes=str(problem),
            )
        except SandboxError as error:
            report.update(verdict=Verdict.INTERNAL_ERROR.value, reason=f"sandbox: {error}")
        report["phases_s"] = {name: round(value, 3) for name, value in self.phases.items()}
        report["duration_s"] = round(time.monotonic() - started, 3)
        return storable(report)

    def _round(
        self,
        expert_runner: TestRunner,
        fixed_runner: TestRunner,
        expert: AppliedFix,
        fixed: AppliedFix,
        seeds: tuple[int, int],
    ) -> list[TestOutcome]:
        """Every test on both trees with the same seeds, each judged as soon as the
        fix's sandbox for it has ended; the fix's values are then let go."""
        tests = list(self.spec.all_tests)
        expert_runs = expert_runner.run(expert.tree, tests, seeds)
        outcomes: dict[str, TestOutcome] = {}

        def judged(test: TestId, run: SideRun) -> None:
            began = time.monotonic()
            outcomes[test.id] = judge(self.spec, test, expert_runs[test.id], run)
            run.value = run.value_node = None
            self._timed("compare", began)

        fixed_runner.run(fixed.tree, tests, seeds, caps=reply_caps(expert_runs), done=judged)
        return [outcomes[t.id] for t in tests]

    def _timed(self, phase: str, began: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + time.monotonic() - began

    def _grade(
        self, submission: Mapping[str, str], task_files: Mapping[str, str]
    ) -> dict[str, Any]:
        began = time.monotonic()
        try:
            expert = apply_fix(self.spec, {"fix.diff": task_files[self.spec.solution]})
        except FixRefused as refused:
            raise TaskProblem(f"the expert fix is refused: {refused.reason}") from None
        fixed = (
            AppliedFix(dict(self.spec.source), (), 0, "")
            if self.baseline
            else apply_fix(self.spec, submission)
        )
        self._timed("patch", began)
        rounds: list[list[TestOutcome]] = []
        expert_runner = TestRunner(self.spec, self.backend, "expert")
        fixed_runner = TestRunner(self.spec, self.backend, "submission")
        for _ in range(self.repeat):
            # Fresh secret seeds, one for the visible tests and one for the hidden ones.
            seeds = (secrets.randbelow(2**31), secrets.randbelow(2**31))
            began = time.monotonic()
            rounds.append(self._round(expert_runner, fixed_runner, expert, fixed, seeds))
            self._timed("tests", began)
        self.phases["sandbox_start"] = expert_runner.startup_s + fixed_runner.startup_s
        self.phases["tests"] = (
            self.phases.get("tests", 0.0)
            - self.phases["sandbox_start"]
            - self.phases.get("compare", 0.0)
        )
        outcomes = rounds[-1]
        result = {
            "tests": [outcome.as_dict() for outcome in outcomes],
            "counts": _counts(outcomes),
            "lines_changed": fixed.lines_changed,
            "changed_files": list(fixed.changed),
            "diff": fixed.diff,
            "processes": expert_runner.processes + fixed_runner.processes,
        }
        flaky = _flaky(rounds)
        if flaky:
            raise TaskProblem(
                f"flaky: {', '.join(flaky)} changed outcome over {self.repeat} runs on fresh seeds"
            )
        if self.baseline:
            return {**result, **_baseline_verdict(outcomes)}
        return {**result, **_verdict(outcomes)}


def _counts(outcomes: list[TestOutcome]) -> dict[str, int | bool]:
    counts: dict[str, int | bool] = {}
    for group in ("fail_to_pass", "pass_to_pass"):
        mine = [o for o in outcomes if o.group == group]
        counts[f"{group}_passed"] = sum(o.passed for o in mine)
        counts[f"{group}_total"] = len(mine)
    counts["resolved"] = all(o.passed for o in outcomes)
    return counts


def _flaky(rounds: list[list[TestOutcome]]) -> list[str]:
    if len(rounds) < 2:
        return []
    return [
        first.test.id
        for index, first in enumerate(rounds[0])
        if len({r[index].passed for r in rounds}) > 1
    ]


def _summary(outcomes: list[TestOutcome]) -> str:
    counts = _counts(outcomes)
    return (
        f"FAIL_TO_PASS {counts['fail_to_pass_passed']}/{counts['fail_to_pass_total']} pass, "
        f"PASS_TO_PASS {counts['pass_to_pass_passed']}/{counts['pass_to_pass_total']} pass"
    )


def _verdict(outcomes: list[TestOutcome]) -> dict[str, Any]:
    failing = [o for o in outcomes if not o.passed]
    if not failing:
        return {"verdict": Verdict.ACCEPTED.value, "reason": f"resolved: {_summary(outcomes)}"}
    verdict, first = next(
        (verdict, outcome)
        for name, verdict in OUTCOME_VERDICTS
        for outcome in failing
        if outcome.outcome == name
    )
    # The reason names a visible test and quotes it; a hidden one only by its group.
    where = first.test.id if first.visible else f"a hidden {first.group.upper()} test"
    detail = f": {tail(first.message, 600)}" if first.visible else f" ({first.outcome})"
    return {
        "verdict": verdict.value,
        "reason": f"not resolved: {_summary(outcomes)}; {where}{detail}",
    }


def _baseline_verdict(outcomes: list[TestOutcome]) -> dict[str, Any]:
    """The unchanged tree must fail every FAIL_TO_PASS test and pass every other."""
    wrong = [
        o.test.id + (" passes" if o.passed else f" fails ({o.outcome}: {o.message})")
        for o in outcomes
        if o.passed == (o.group == "fail_to_pass")
    ]
    if wrong:
        raise TaskProblem("the unchanged source does not show the bug: " + "; ".join(wrong))
    return {
        "verdict": Verdict.WRONG_ANSWER.value,
        "reason": f"the unchanged source, as a buggy tree must: {_summary(outcomes)}",
    }


def grade(
    spec: DebugSpec,
    task_files: Mapping[str, str],
    submission_files: Mapping[str, str],
    backend: Sandbox,
    *,
    baseline: bool = False,
    repeat: int = 1,
) -> dict[str, Any]:
    return Grading(spec, backend, baseline=baseline, repeat=repeat).run(
        submission_files, task_files
    )
