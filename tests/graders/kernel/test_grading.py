"""Kernel grading end to end in the real bubblewrap sandbox: the report, both
problem formats, failures that are the platform's and not the submission's,
and the ``grade`` command. The GPU timing path (CUDA events, L2 flush,
profiler witness) exists in the harness but cannot run on this CPU-only host.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from graders.files import grade_paths, render
from graders.kernel.grading import classify_error, grade, limit_verdict
from graders.kernel.harness.protocol import HARNESS_VERSION
from graders.kernel.kind import KernelKind
from graders.kernel.report import GradeReport, Verdict
from graders.kernel.spec import GradingSpec, ShapeSet, TimingSettings
from graders.kernel.timing import LEAN_LOOP_FACTOR
from sandboxes import get_backend, hardware
from sandboxes.base import Limits, RunResult, Sandbox
from sandboxes.bwrap import BwrapSandbox
from sandboxes.unsandboxed import Unsandboxed

EXPLOITS = Path(__file__).parent / "exploits"
ADD_RELU = EXPLOITS / "problems" / "addrelu"
HONEST = (EXPLOITS / "honest_pytorch.py").read_text()
QUICK = TimingSettings(warmup=1, min_batches=2, max_batches=3, budget_s=0.5, call_timeout_s=5.0)

LINEAR_REFERENCE = """
import torch
import torch.nn as nn

batch = 4
features = 32

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.proj = nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.proj(x))

def get_inputs():
    return [torch.randn(batch, features)]

def get_init_inputs():
    return [features]
"""

GPUMODE_REFERENCE = """
import torch

def generate_input(size: int = 257, seed: int = 0):
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)),)

def ref_kernel(data):
    return torch.tanh(data[0])
"""


def public(report: GradeReport) -> dict:
    """What a solver may see of a report."""
    return KernelKind().public_report(report.to_dict())


@pytest.fixture(scope="module")
def backend() -> Sandbox:
    sandbox = get_backend("bwrap")
    sandbox.check()
    return sandbox


@pytest.fixture(scope="module")
def add_relu() -> GradingSpec:
    return GradingSpec.from_bundle_dir(ADD_RELU)


@pytest.fixture(scope="module")
def accepted(backend: Sandbox, add_relu: GradingSpec) -> GradeReport:
    return grade(add_relu, {"solution.py": HONEST}, backend=backend, limits=Limits())


def bare_spec(tmp_path: Path, name: str, source: str) -> GradingSpec:
    path = tmp_path / name
    path.write_text(source)
    return dataclasses.replace(GradingSpec.from_problem_file(path), timing=QUICK)


def test_report_of_an_accepted_submission(accepted: GradeReport) -> None:
    assert accepted.verdict == Verdict.ACCEPTED, accepted.reason
    assert [t.shape for t in accepted.correctness] == ["small"] * 5 + ["ragged"] * 5 + [
        "timing"
    ] * 5
    assert all(t.ok and t.max_abs_error == 0.0 for t in accepted.correctness)
    assert accepted.correctness[5].shapes == [[3, 1031]] and accepted.correctness[5].dtypes == [
        "float32"
    ]
    assert len({t.seed for t in accepted.correctness}) == 15  # fresh secret seeds for every trial
    # Timed calls were compared too, not only the correctness trials.
    timing = accepted.timing
    assert timing is not None
    assert timing.timing_mode == "cpu_time" and timing.scored and timing.shape == "timing"
    # The speedup is the median of paired batch ratios, inside its sign-test interval.
    assert timing.speedup_ci[0] <= timing.speedup <= timing.speedup_ci[1]
    ratios = [
        ref / sub
        for ref, sub in zip(timing.reference.samples_s, timing.submission.samples_s, strict=True)
    ]
    assert min(ratios) <= timing.speedup <= max(ratios)
    assert timing.reference.count == timing.submission.count >= 6  # pairs, at least six
    assert timing.witness["pairs"] == timing.reference.count
    # The reference's own bookkeeping per call, measured by its harness, widens the margin.
    share = timing.witness["bookkeeping_share"]
    assert 0 < share <= 0.25
    assert timing.witness["faster_margin"] == pytest.approx(0.05 + LEAN_LOOP_FACTOR * share)
    assert accepted.checked_calls >= 15 + timing.submission.calls
    assert timing.reference.ci_low_s <= timing.reference.median_s <= timing.reference.ci_high_s
    assert accepted.integrity.clean and len(accepted.integrity.checks) >= 5
    assert accepted.harness_version == HARNESS_VERSION
    assert {"torch", "triton", "python", "cpu_model", "sandbox"} <= set(accepted.hardware)
    assert accepted.hardware["sandbox"] == "bwrap"
    phases = {"sandbox_start", "imports", "reference_phase", "submission_phase", "comparison"}
    assert phases <= set(accepted.phases)
    assert accepted.duration_s >= sum(
        accepted.phases[name] for name in ("sandbox_start", "imports")
    )


def test_report_survives_json(accepted: GradeReport) -> None:
    data = json.loads(json.dumps(accepted.to_dict()))
    assert data["verdict"] == "accepted" and data["speedup"] == accepted.speedup
    assert data["timing_mode"] == "cpu_time"
    assert GradeReport.from_dict(data) == accepted
    assert "operator_notes" not in public(accepted)


SOLUTION_LINEAR = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        torch.randn(7)  # draws from the shared seed first: its init differs from the reference's
        self.proj = nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.proj(x))
"""


def test_reference_weights_are_copied_into_the_solution(backend: Sandbox, tmp_path: Path) -> None:
    spec = bare_spec(tmp_path, "linear.py", LINEAR_REFERENCE)
    report = grade(spec, {"solution.py": SOLUTION_LINEAR}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.ACCEPTED, report.reason
    # Copied by name: under another name the weights stay the solution's own.
    renamed = SOLUTION_LINEAR.replace("self.proj", "self.other")
    report = grade(spec, {"solution.py": renamed}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.WRONG_ANSWER
    assert "differs from the reference" in report.reason


HUNGRY_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        scratch = torch.ones(600_000_000)  # 2.4 GB: more than the grading's memory
        return x + scratch[0]


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
"""


def test_a_reference_over_its_memory_limit_is_a_task_error(
    backend: Sandbox, tmp_path: Path
) -> None:
    """The task's own code needing more memory than a grading has (a KernelBench matmul
    with a 4 GB output, left at its GPU sizes) fails the same way every time: the task's
    problem, not an internal error to retry."""
    spec = bare_spec(tmp_path, "hungry.py", HUNGRY_REFERENCE)
    solution = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
    solution += "    def forward(self, x):\n        return x + 1\n"
    limits = Limits(memory_bytes=2 * 1024**3)
    report = grade(spec, {"solution.py": solution}, backend=backend, limits=limits)
    assert report.verdict == Verdict.TASK_ERROR, (report.reason, report.operator_notes)
    assert "reached its memory limit" in report.reason


def test_reference_weights_over_the_cap_are_a_task_error(
    backend: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reference whose weights at a shape set are more than a grading holds (a wide
    MLP left at its GPU sizes) is the task's problem, not an internal error."""
    import graders.kernel.grading

    monkeypatch.setattr(graders.kernel.grading, "MAX_STATE_BYTES", 2048)  # 32x32 floats: 4 KiB
    spec = bare_spec(tmp_path, "linear.py", LINEAR_REFERENCE)
    report = grade(spec, {"solution.py": SOLUTION_LINEAR}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.TASK_ERROR, report.reason
    assert "more data than a grading can hold" in report.reason
    assert "over the 2048 cap" in report.operator_notes


def test_an_output_larger_than_the_batch_budget_is_not_too_large_for_its_own_reference(
    backend: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A correctness call whose reference output alone is more than the budget for a
    batch's outputs (a transposed convolution at CPU sizes made for timing): the same
    output from the submission is no "far larger" output."""
    import graders.kernel.grading

    monkeypatch.setattr(graders.kernel.grading, "BATCH_MEMORY_BYTES", 1024)  # the output: 4 KiB
    spec = bare_spec(tmp_path, "linear.py", LINEAR_REFERENCE)
    report = grade(spec, {"solution.py": SOLUTION_LINEAR}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.ACCEPTED, report.reason


def test_what_a_tasks_own_check_prints_stays_with_reviewers(
    backend: Sandbox, tmp_path: Path
) -> None:
    """A task's check_implementation may name the expected value ("got 0, expected
    8.16"): the reason a solver sees says only that the check rejected the output; the
    trial record (reviewers) and the operator notes keep the check's words."""
    import shutil

    folder = tmp_path / "rowsum"
    shutil.copytree(EXPLOITS / "problems" / "rowsum", folder)
    reference = folder / "reference.py"
    reference.write_text(
        reference.read_text().replace(
            '''        worst = (output - expected).abs().max().item()
        return False, f"mismatch: max abs error {worst:.3g}"''',
            '''        row = int((output - expected).abs().argmax())
        got, want = output[row].item(), expected[row].item()
        return False, f"row {row}: got {got:.6g}, expected {want:.6g}"''',
        )
    )
    assert "expected {want" in reference.read_text()
    spec = dataclasses.replace(GradingSpec.from_bundle_dir(folder), timing=QUICK)
    zeros = "import torch\n\ndef custom_kernel(data):\n    return torch.zeros(data[0].shape[0])\n"

    report = grade(spec, {"solution.py": zeros}, backend=backend, limits=Limits())

    assert report.verdict == Verdict.WRONG_ANSWER, report.reason
    assert report.reason.endswith("the task's check_implementation rejects the output")
    assert "expected" not in json.dumps(public(report))
    failed = [trial for trial in report.correctness if not trial.ok]
    assert "got 0, expected" in failed[-1].message
    assert "got 0, expected" in report.operator_notes


def test_free_text_in_a_report_is_capped(backend: Sandbox, tmp_path: Path) -> None:
    """A dict key of millions of characters once made a 14 MB report (the reason and a
    trial's message quoted it whole)."""
    spec = dataclasses.replace(
        GradingSpec.from_bundle_dir(EXPLOITS / "problems" / "dictout"), timing=QUICK
    )
    huge_key = (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, *args):\n"
        "        return {'k' * 3_000_000: torch.zeros(1)}\n"
    )

    report = grade(spec, {"solution.py": huge_key}, backend=backend, limits=Limits())

    assert report.verdict == Verdict.WRONG_ANSWER, report.reason[:300]
    data = report.to_dict()
    assert len(json.dumps(data)) < 100_000
    assert len(data["reason"]) <= 4000


def test_gpumode_without_its_own_check_uses_the_tolerances(
    backend: Sandbox, tmp_path: Path
) -> None:
    spec = bare_spec(tmp_path, "reference.py", GPUMODE_REFERENCE)
    good = "import torch\n\ndef custom_kernel(data):\n    return torch.tanh(data[0])\n"
    report = grade(spec, {"tanh.py": good}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.ACCEPTED, report.reason
    rough = "import torch\n\ndef custom_kernel(data):\n    return torch.clamp(data[0], -1, 1)\n"
    report = grade(spec, {"solution.py": rough}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.WRONG_ANSWER
    assert "differs from the reference" in report.reason
    assert (
        report.correctness[0].max_abs_error is not None
        and report.correctness[0].max_abs_error > 0.01
    )


def test_a_broken_reference_is_a_task_error(backend: Sandbox, tmp_path: Path) -> None:
    """The reference's own code raising is the task's problem: never the submission's,
    and not an internal error to be retried."""
    spec = bare_spec(
        tmp_path,
        "broken.py",
        LINEAR_REFERENCE.replace("return [torch.randn", "return [1 / 0, torch.randn"),
    )
    report = grade(spec, {"solution.py": SOLUTION_LINEAR}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.TASK_ERROR
    assert report.reason.startswith("the task's reference failed: a problem with the task")
    # The details may quote hidden files: for operators (and the task's authors) only.
    assert "the reference raised ZeroDivisionError" in report.operator_notes
    assert "ZeroDivisionError" not in str(public(report))


def test_a_sandbox_without_python_is_an_internal_error(add_relu: GradingSpec) -> None:
    report = grade(
        add_relu, {"solution.py": HONEST}, backend=BwrapSandbox(python_prefixes=[]), limits=Limits()
    )
    assert report.verdict == Verdict.INTERNAL_ERROR


def test_cuda_needs_a_gpu_host_and_nothing_runs_here(add_relu: GradingSpec) -> None:
    spec = dataclasses.replace(add_relu, language="cuda", hardware="h100")
    report = grade(
        spec, {"solution.py": HONEST}, backend=get_backend("bwrap"), limits=Limits(), hardware="cpu"
    )
    assert report.verdict == Verdict.NEEDS_HARDWARE
    assert "sandbox_start" not in report.phases


def test_cuda_on_a_cpu_task_is_the_solutions_error(add_relu: GradingSpec) -> None:
    """Only real CUDA use counts: a string that merely names a .cu file does not."""
    cuda = HONEST + (
        "\nfrom torch.utils.cpp_extension import load_inline\n"
        'load_inline("k", cpp_sources="", cuda_sources="")\n'
    )
    report = grade(add_relu, {"solution.py": cuda}, backend=get_backend("bwrap"), limits=Limits())
    assert report.verdict == Verdict.RUNTIME_ERROR
    assert report.reason == "the solution uses CUDA source, but this task runs on a CPU"
    named = "SEE_ALSO = 'notes.cu'\n" + HONEST.replace("clamp_min_(0.0)", "clamp_min_(1.0)")
    report = grade(add_relu, {"solution.py": named}, backend=get_backend("bwrap"), limits=Limits())
    assert report.verdict == Verdict.WRONG_ANSWER


def test_a_cuda_error_message_needs_hardware_only_where_the_task_targets_a_gpu() -> None:
    error = {
        "where": "call",
        "type": "RuntimeError",
        "message": "Torch not compiled with CUDA enabled",
    }
    assert classify_error(error)[0] == Verdict.NEEDS_HARDWARE
    assert classify_error(error, gpu_missing=False)[0] == Verdict.RUNTIME_ERROR


def test_no_shape_set_for_this_kind_of_host_needs_hardware(add_relu: GradingSpec) -> None:
    spec = dataclasses.replace(add_relu, shapes=[ShapeSet("h100-sized", {"rows": 8192}, ("gpu",))])
    report = grade(spec, {"solution.py": HONEST}, backend=get_backend("bwrap"), limits=Limits())
    assert report.verdict == Verdict.NEEDS_HARDWARE
    assert "no shape set of this task is marked for cpu hosts" in report.reason


def test_fewer_than_five_trials_are_refused(add_relu: GradingSpec) -> None:
    report = grade(
        add_relu, {"solution.py": HONEST}, backend=get_backend("bwrap"), limits=Limits(), trials=2
    )
    assert report.verdict == Verdict.INTERNAL_ERROR
    assert "trials must be at least 5" in report.operator_notes


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"a.py": HONEST, "b.py": HONEST}, "no solution.py among the submitted files (a.py, b.py)"),
        ({"solution.py": HONEST, "../escape.py": ""}, "invalid file name '../escape.py'"),
        ({"solution.py": "x" * (5 * 1024 * 1024)}, "at most"),
        ({"solution.py": HONEST, "solution.py/x.py": ""}, "is both a file and a folder"),
        ({"solution.py": HONEST, "\u00e9" * 127 + ".py": ""}, "has a part over 255 bytes"),
    ],
)
def test_malformed_submissions_get_a_runtime_error(
    add_relu: GradingSpec, files: dict[str, str], reason: str
) -> None:
    report = grade(add_relu, files, backend=get_backend("bwrap"), limits=Limits())
    assert report.verdict == Verdict.RUNTIME_ERROR
    assert reason in report.reason


def test_a_file_where_the_task_has_one_is_the_submissions_error() -> None:
    rowsum = GradingSpec.from_bundle_dir(EXPLOITS / "problems" / "rowsum")
    files = {
        "solution.py": "def custom_kernel(data):\n    return data[0].sum(1)\n",
        "task.py/x": "",
    }
    report = grade(rowsum, files, backend=get_backend("bwrap"), limits=Limits())
    assert report.verdict == Verdict.RUNTIME_ERROR
    assert report.reason == "'task.py/x' collides with one of the task's files"


def test_a_single_python_file_is_the_entry_whatever_its_name(
    backend: Sandbox, add_relu: GradingSpec
) -> None:
    report = grade(add_relu, {"kernel.py": "X = 1\n"}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.RUNTIME_ERROR
    assert report.reason == "the solution does not define ModelNew"


def test_unsandboxed_backend_is_opt_in_and_never_selectable() -> None:
    with pytest.raises(ValueError, match="allow_unsafe=True"):
        Unsandboxed()
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        get_backend("unsandboxed")


def test_unsandboxed_backend_runs_the_same_harness(add_relu: GradingSpec) -> None:
    spec = dataclasses.replace(add_relu, timing=QUICK)
    report = grade(
        spec, {"solution.py": HONEST}, backend=Unsandboxed(allow_unsafe=True), limits=Limits()
    )
    assert report.verdict == Verdict.ACCEPTED, report.reason
    assert report.hardware["sandbox"] == "unsandboxed"


def test_error_classification() -> None:
    assert (
        classify_error({"where": "import", "type": "SyntaxError", "message": "bad"})[0]
        == Verdict.COMPILE_ERROR
    )
    build = {"where": "import", "type": "RuntimeError", "message": "Error building extension 'x'"}
    assert classify_error(build)[0] == Verdict.COMPILE_ERROR
    assert (
        classify_error({"where": "call", "type": "MemoryError", "message": ""})[0]
        == Verdict.MEMORY_LIMIT_EXCEEDED
    )
    no_gpu = {
        "where": "call",
        "type": "AssertionError",
        "message": "Torch not compiled with CUDA enabled",
    }
    assert classify_error(no_gpu)[0] == Verdict.NEEDS_HARDWARE
    assert classify_error({"where": "call", "type": "ValueError", "message": "x"}) == (
        Verdict.RUNTIME_ERROR,
        "a call raised ValueError: x",
    )


@pytest.mark.parametrize(
    ("limit", "verdict"),
    [
        ("wall_time", Verdict.TIME_LIMIT_EXCEEDED),
        ("cpu_time", Verdict.TIME_LIMIT_EXCEEDED),
        ("memory", Verdict.MEMORY_LIMIT_EXCEEDED),
        ("output", Verdict.OUTPUT_LIMIT_EXCEEDED),
        ("file_size", Verdict.OUTPUT_LIMIT_EXCEEDED),
        ("processes", Verdict.RUNTIME_ERROR),
    ],
)
def test_limits_map_to_verdicts(limit: str, verdict: Verdict) -> None:
    result = RunResult(None, 9, b"", b"", False, False, 1.0, 1.0, limit)  # type: ignore[arg-type]
    mapped = limit_verdict(result)
    assert mapped is not None and mapped[0] == verdict


def test_no_path_of_this_host_reaches_a_client(backend: Sandbox, add_relu: GradingSpec) -> None:
    # Tracebacks and warnings name the Python installation, which the sandbox binds
    # at its own path; a report names none of this host's folders.
    noisy = HONEST.replace(
        "class ModelNew",
        "import sys\nprint(torch.__file__, sys.prefix, file=sys.stderr)\n\n\nclass ModelNew",
    )
    report = grade(add_relu, {"solution.py": noisy}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.ACCEPTED, report.reason
    assert "<python>/" in report.logs["stderr"]
    text = json.dumps(public(report))
    assert sys.prefix not in text and sys.base_prefix not in text
    assert str(Path(__file__).resolve().parents[3]) not in text
    assert "executable" not in report.hardware


def test_hardware_detection_describes_this_host() -> None:
    host = hardware.detect()
    assert host["host_kind"] == "cpu" and host["gpu"] is None  # no GPU on this machine
    assert host["torch"] and host["python"] and host["cpu_count"]
    assert hardware.gpu_class("NVIDIA H100 80GB HBM3") == "h100"
    assert hardware.gpu_class("AMD Instinct MI300X") == "mi300x"


def test_grade_paths_reports_unusable_inputs_without_grading(tmp_path: Path) -> None:
    report = grade_paths(tmp_path / "missing.py", EXPLOITS / "honest_pytorch.py")
    assert report["verdict"] == "internal_error" and "the task cannot be used" in report["reason"]
    (tmp_path / "bundle").mkdir()
    report = grade_paths(tmp_path / "bundle", EXPLOITS / "honest_pytorch.py")
    assert report["verdict"] == "internal_error" and "task.toml: not found" in report["reason"]
    report = grade_paths(ADD_RELU, tmp_path / "missing.py")
    assert (
        report["verdict"] == "runtime_error" and "the submission cannot be read" in report["reason"]
    )
    assert json.loads(render(report, kind="kernel", as_json=True))["verdict"] == "runtime_error"


def test_grade_command_prints_one_json_object() -> None:
    out = io.StringIO()
    call_command(
        "grade", str(ADD_RELU), str(EXPLOITS / "honest_pytorch.py"), "--json", stdout=out
    )  # exit 0
    data = json.loads(out.getvalue())
    assert data["verdict"] == "accepted", data["reason"]
    assert isinstance(data["speedup"], float) and data["timing_mode"] == "cpu_time"
    assert {"correctness", "timing", "integrity", "hardware"} <= set(data)


def test_grade_command_text_report_and_exit_status() -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("grade", str(ADD_RELU), str(EXPLOITS / "wrong_shape.py"), stdout=out)
    assert exited.value.code == 1
    text = out.getvalue()
    assert "verdict:     wrong_answer" in text and "has shape [800]" in text


def test_calls_too_short_to_time_are_reported_but_not_scored(backend: Sandbox) -> None:
    """rowsum's calls take microseconds: less than the harness's own work around them,
    which a submission could trim by replacing the harness's loop in its own process."""
    rowsum = GradingSpec.from_bundle_dir(EXPLOITS / "problems" / "rowsum")
    solution = (EXPLOITS / "honest_gpumode.py").read_text()
    report = grade(rowsum, {"solution.py": solution}, backend=backend, limits=Limits())
    assert report.verdict == Verdict.ACCEPTED, report.reason
    assert report.timing is not None and report.timing.timing_mode == "cpu_time"
    assert not report.timing.scored and not report.timing.significant
    assert "more than 25% of the reference's call" in report.timing.unscored_reason
    assert report.timing.witness["bookkeeping_share"] > 0.25
    assert "not scored" in report.reason
    assert report.hardware["timed_on_cpu"] in os.sched_getaffinity(0)


SLOW_REFERENCE = """
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        began = time.process_time()  # the task's own code is slow: it keeps the CPU busy
        while time.process_time() - began < BUSY_S:
            pass
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4, 32)]


def get_init_inputs():
    return []
"""

FAST_SOLUTION = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_a_wall_limit_the_task_itself_fills_is_not_blamed_on_the_submission(
    backend: Sandbox, tmp_path: Path
) -> None:
    """The submission's process lives through the whole grading, so its wall limit also
    pays for the reference's work: when that work, not the submission, used it up, the
    verdict is the platform's (retried), never time_limit_exceeded on honest code."""
    spec = bare_spec(tmp_path, "slow.py", SLOW_REFERENCE.replace("BUSY_S", "8.0"))
    report = grade(
        spec, {"solution.py": FAST_SOLUTION}, backend=backend, limits=Limits(wall_time_s=30)
    )
    assert report.verdict == Verdict.INTERNAL_ERROR, report.reason
    assert "ran out of wall time" in report.reason and "task's own processes" in report.reason
    assert "wall time: inputs and reference" in report.operator_notes

    # A submission slower than the task's own work is still the one that ran out of time.
    spec = bare_spec(tmp_path, "quick.py", SLOW_REFERENCE.replace("BUSY_S", "0.01"))
    slow = FAST_SOLUTION.replace(
        "        return torch.relu(x)",
        "        __import__('time').sleep(8.0)\n        return torch.relu(x)",
    )
    report = grade(spec, {"solution.py": slow}, backend=backend, limits=Limits(wall_time_s=30))
    assert report.verdict == Verdict.TIME_LIMIT_EXCEEDED, report.reason
