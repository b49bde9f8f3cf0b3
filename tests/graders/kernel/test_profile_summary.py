"""The trace summary for reviewers (``graders.kernel.profile``), on real gradings of a
catalog CPU task in the bubblewrap sandbox: what it holds, that the timing is what it
was, who may see which side, and that a profile that breaks leaves the verdict alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.kernel.grading import grade
from graders.kernel.kind import KernelKind
from graders.kernel.profile import PROFILE_CALLS, TOP_OPERATORS
from graders.kernel.report import GradeReport, Verdict
from graders.kernel.spec import GradingSpec
from sandboxes import get_backend
from sandboxes.base import Limits, Sandbox

TASK = Path(__file__).resolve().parents[3] / "reference_solutions" / "cpu-add-layernorm"

# The reference's own computation, as a solution: plain PyTorch, no build.
PYTORCH = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, residual):
{extra}        return self.norm(x + residual)
"""
# Ways a profile breaks in the submission's process, each only while the profiler runs
# (the graded and timed calls never see them).
PROFILING = "        if torch._C._autograd._profiler_enabled():\n"
BREAKS = {
    "raises": PROFILING + "            raise RuntimeError('not while profiled')\n",
    "exits": PROFILING + "            import os; os._exit(3)\n",
    # Up to the sandbox's process limit: the fork that would pass it fails, and the
    # supervisor ends the sandbox. Which the grader sees first is a race: the failed
    # fork's error coming back, or the process gone.
    "forks": PROFILING
    + "            import subprocess\n"
    + "            [subprocess.Popen(['sleep', '30']) for _ in range(100)]\n",
    # A forged summary: the profiler's averages replaced by rows the grader refuses.
    "forges": PROFILING
    + "            import torch.autograd.profiler as p\n"
    + "            class Row:\n"
    + "                key, count, self_cpu_time_total, cpu_time_total = 'x' * 10, -5, 1.0, 1.0\n"
    + "            p.profile.key_averages = lambda self, *a, **k: [Row()] * 3\n",
}
TIMING_KEYS = {
    "timing_mode", "method", "shape", "reference", "submission", "speedup", "speedup_ci",
    "significant", "scored", "calls_per_batch", "witness", "unscored_reason",
}  # fmt: skip
STATS_KEYS = {"median_s", "spread", "count", "calls", "ci_low_s", "ci_high_s", "samples_s"}


@pytest.fixture(scope="module")
def backend() -> Sandbox:
    sandbox = get_backend("bwrap")
    sandbox.check()
    return sandbox


@pytest.fixture(scope="module")
def spec() -> GradingSpec:
    return GradingSpec.from_bundle_dir(TASK)


@pytest.fixture(scope="module")
def solution(backend: Sandbox, spec: GradingSpec) -> GradeReport:
    """The catalog's own solution (a C++ extension)."""
    files = {"solution.py": (TASK / "solution.py").read_text()}
    return grade(spec, files, backend=backend, limits=Limits())


def operators(side: dict) -> dict[str, dict]:
    return {op["name"]: op for op in side["operators"]}


def test_an_accepted_grading_carries_both_sides_top_operators(solution: GradeReport) -> None:
    assert solution.verdict == Verdict.ACCEPTED, solution.reason
    profile = solution.to_dict()["profile"]
    assert profile["calls"] == PROFILE_CALLS and profile["device"] == "cpu"
    assert profile["reference_public"] is False  # the task hides its reference
    reference, submission = profile["reference"], profile["submission"]
    assert reference["note"] == "" and submission["note"] == ""
    # The reference is nn.LayerNorm over x + residual: one add and one layer norm a call,
    # and they take most of its time.
    ref_ops = operators(reference)
    assert ref_ops["aten::add"]["count"] == 1 and ref_ops["aten::native_layer_norm"]["count"] == 1
    heavy = ref_ops["aten::add"]["self_cpu_us"] + ref_ops["aten::native_layer_norm"]["self_cpu_us"]
    assert heavy > 0.5 * reference["cpu_us_per_call"] > 0
    assert reference["ops_per_call"] == 2 and reference["launches_per_call"] is None
    # Sorted by self time, at most TOP_OPERATORS, figures per call.
    selfs = [op["self_cpu_us"] for op in reference["operators"]]
    assert selfs == sorted(selfs, reverse=True) and len(selfs) <= TOP_OPERATORS
    assert all(op["self_cuda_us"] == 0 for op in reference["operators"])
    # The solution's kernel is a C++ extension the profiler does not see into: its
    # time is the call's own, outside any operator, and it runs no add or layer norm.
    assert "aten::native_layer_norm" not in operators(submission)
    assert submission["outside_us_per_call"] > 0.5 * submission["cpu_us_per_call"] > 0
    assert solution.phases["profile"] > 0


def test_the_timing_is_as_it_was(solution: GradeReport) -> None:
    """Profiling comes after the timed batches: the timing section keeps its fields and
    its pairs, and the reason still reads as before."""
    timing = solution.to_dict()["timing"]
    assert set(timing) == TIMING_KEYS
    for side in ("reference", "submission"):
        assert set(timing[side]) == STATS_KEYS
        assert len(timing[side]["samples_s"]) == timing[side]["count"] >= 6
    assert timing["witness"]["pairs"] == timing["reference"]["count"]
    assert solution.reason.startswith("correct on 4 shape set(s) x 5 trials")
    assert "profile" not in solution.reason and solution.integrity.clean


def test_a_solver_sees_their_own_operators_but_not_a_hidden_reference(
    solution: GradeReport,
) -> None:
    public = KernelKind().public_report(solution.to_dict())
    profile = public["profile"]
    assert set(profile) == {"calls", "device", "submission"}
    assert profile["submission"]["operators"] == solution.profile["submission"]["operators"]
    assert "aten::native_layer_norm" not in str(public)


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_profile_that_breaks_leaves_the_verdict_alone(
    backend: Sandbox, spec: GradingSpec, how: str
) -> None:
    files = {"solution.py": PYTORCH.format(extra=BREAKS[how])}
    report = grade(spec, files, backend=backend, limits=Limits())

    assert report.verdict == Verdict.ACCEPTED, report.reason
    assert report.integrity.clean and report.timing is not None
    submission = report.profile["submission"]
    assert submission["operators"] == [] and submission["note"]
    gone = "the submission process did not answer (gone)"
    expected = {
        "raises": ("the profiled calls failed (RuntimeError: not while profiled)",),
        "exits": (gone,),
        "forks": ("the profiled calls failed (BlockingIOError", gone),
        "forges": ("sent a malformed one",),
    }[how]
    assert any(note in submission["note"] for note in expected), submission["note"]
    # The reference was profiled first, whatever the submission did after.
    assert "aten::native_layer_norm" in operators(report.profile["reference"])
