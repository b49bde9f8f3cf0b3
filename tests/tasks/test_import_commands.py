"""import_kernelbench / import_gpumode end to end: fixtures -> bundles -> database -> grader."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tasks.models import Task, TaskStatus

FIXTURES = Path(__file__).parent / "fixtures"

ROW_SUM_SOLUTION = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)
"""


@pytest.mark.django_db
def test_kernelbench_problems_are_imported_and_published(tmp_path, capsys):
    call_command("import_kernelbench", str(FIXTURES / "kernelbench"), "--out", str(tmp_path))

    out = capsys.readouterr().out
    assert "kb-l1-3-row-sum: created task, version 1" in out
    task = Task.objects.get(slug="kb-l2-12-linear-bias-relu")
    assert task.status == TaskStatus.PUBLISHED
    assert task.hardware == "h100"
    files = {f.path: f.visibility for f in task.current_version.files.all()}
    # Both public formats show the reference to the solver: it is the problem statement.
    assert files == {"reference.py": "prompt", "statement.md": "prompt"}


@pytest.mark.django_db
def test_importing_the_same_problems_again_creates_nothing(tmp_path, capsys):
    for _ in range(2):
        call_command("import_gpumode", str(FIXTURES / "gpumode"), "--out", str(tmp_path))

    assert "gpumode-vector-scale: unchanged (version 1)" in capsys.readouterr().out
    assert Task.objects.get(slug="gpumode-vector-scale").versions.count() == 1


@pytest.mark.django_db
def test_the_level_filter_picks_only_that_level(tmp_path):
    call_command(
        "import_kernelbench", str(FIXTURES / "kernelbench"), "--level", "2", "--out", str(tmp_path)
    )

    assert sorted(Task.objects.values_list("slug", flat=True)) == [
        "kb-l2-12-linear-bias-relu",
        "kb-l2-21-conv2d-biasadd-scale-sigmoid",
    ]


def test_a_folder_without_problems_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="no GPU MODE problem folders"):
        call_command("import_gpumode", str(tmp_path), "--no-import")


@pytest.mark.slow
def test_an_imported_task_grades_on_its_cpu_shape_set(tmp_path):
    from graders.kernel.grading import grade
    from graders.kernel.spec import GradingSpec
    from sandboxes import get_backend
    from sandboxes.base import Limits

    call_command(
        "import_kernelbench",
        str(FIXTURES / "kernelbench" / "level1"),
        "--level",
        "1",
        "--out",
        str(tmp_path),
        "--no-import",
    )
    spec = GradingSpec.from_bundle_dir(tmp_path / "kb-l1-3-row-sum")

    report = grade(
        spec, {"solution.py": ROW_SUM_SOLUTION}, backend=get_backend("bwrap"), limits=Limits()
    )

    assert report.verdict.value == "accepted", report.reason
    assert {trial.shape for trial in report.correctness} == {"cpu-scaled"}
    assert report.correctness[0].shapes[0][0] < 8192, "the CPU set is scaled down"


@pytest.mark.slow
def test_a_level_2_problem_with_derived_globals_grades_its_own_reference(tmp_path):
    """``bias_shape = (out_channels, 1, 1)`` must follow the scaled-down
    ``out_channels``: the reference itself, as the solution, is accepted."""
    from graders.kernel.grading import grade
    from graders.kernel.spec import GradingSpec
    from sandboxes import get_backend
    from sandboxes.base import Limits

    problem = FIXTURES / "kernelbench" / "level2" / "21_Conv2d_BiasAdd_Scale_Sigmoid.py"
    call_command(
        "import_kernelbench", str(problem), "--level", "2", "--out", str(tmp_path), "--no-import"
    )
    spec = GradingSpec.from_bundle_dir(tmp_path / "kb-l2-21-conv2d-biasadd-scale-sigmoid")
    identity = problem.read_text().replace("class Model(", "class ModelNew(")

    report = grade(spec, {"solution.py": identity}, backend=get_backend("bwrap"), limits=Limits())

    assert report.verdict.value == "accepted", report.reason
    assert {trial.shape for trial in report.correctness} == {"cpu-scaled"}
    cpu = spec.shapes[-1].params
    # The output: (batch, out_channels, height - 2, width - 2) at the scaled sizes.
    side = cpu["height"] - 2
    assert report.correctness[0].shapes == [[cpu["batch_size"], cpu["out_channels"], side, side]]
    assert cpu["out_channels"] < 64


@pytest.mark.slow
def test_a_gpumode_problem_with_shared_modules_grades_the_suites_own_submission(tmp_path):
    """The reference imports ``task`` and the suite's ``utils`` and makes its inputs on
    ``'cuda'``: imported, it runs on this CPU host, and the problem's own example
    submission (which imports ``task`` too) is accepted."""
    from graders.kernel.grading import grade
    from graders.kernel.spec import GradingSpec
    from sandboxes import get_backend
    from sandboxes.base import Limits

    problem = FIXTURES / "gpumode" / "luma_py"
    call_command("import_gpumode", str(problem), "--out", str(tmp_path), "--no-import")
    spec = GradingSpec.from_bundle_dir(tmp_path / "gpumode-luma")

    report = grade(
        spec,
        {"solution.py": (problem / "submission.py").read_text()},
        backend=get_backend("bwrap"),
        limits=Limits(),
    )

    assert report.verdict.value == "accepted", report.reason
    assert {trial.shape for trial in report.correctness} == {"cpu-1", "cpu-2"}


@pytest.mark.slow
def test_the_suite_report_grades_every_problems_identity_solution(tmp_path, capsys):
    """Both GPU MODE fixtures: one with the suite's own example submission, one graded
    with ref_kernel itself; the table and the totals say what happened to each."""
    out = tmp_path / "report.json"

    call_command(
        "suite_report", str(FIXTURES / "gpumode"), "--format", "gpumode", "--json", str(out)
    )

    data = json.loads(out.read_text())
    by_problem = {item["problem"]: item for item in data["problems"]}
    assert set(by_problem) == {"luma_py", "vector_scale_py"}
    assert all(
        item["verdict"] == "accepted" and item["seconds"] > 0 for item in by_problem.values()
    )
    assert data["summary"]["identity accepted"] == 2 and data["summary"]["internal_error"] == 0
    printed = capsys.readouterr().out
    assert "| luma_py | identity accepted | 2 |" in printed


def test_the_kernelbench_identity_solution_is_the_reference_renamed():
    from tasks.importers import import_kernelbench_file
    from tasks.suite_report import identity_solution

    problem = FIXTURES / "kernelbench" / "level2" / "21_Conv2d_BiasAdd_Scale_Sigmoid.py"
    bundle = import_kernelbench_file(problem, level=2)

    solution = identity_solution(bundle, problem, "kernelbench")["solution.py"]

    assert "class ModelNew(nn.Module):" in solution and "class Model(" not in solution
    assert solution.count("def get_inputs") == 1, "the rest of the reference stays as it was"


@pytest.mark.slow
def test_fitting_shrinks_less_where_the_reference_fails_and_gives_up_on_a_cuda_only_one(
    tmp_path, capsys
):
    """One problem whose GroupNorm(8, ...) refuses the channel count of the full CPU
    shrink (64 -> 4) but runs at the next milder one (64 -> 8), and one whose reference
    needs CUDA at any size: the first is written with the milder sizes, the second as
    GPU-only, with the reference's own error as the reason."""
    import tomllib

    call_command(
        "import_kernelbench",
        str(FIXTURES / "kernelbench_fit"),
        "--fit-cpu",
        "--no-import",
        "--out",
        str(tmp_path),
    )

    printed = capsys.readouterr().out
    groupnorm = tomllib.loads(
        (tmp_path / "kb-l2-31-conv1d-groupnorm-tanh" / "task.toml").read_text()
    )
    cpu = [s for s in groupnorm["grading"]["shapes"] if s.get("hosts") == ["cpu"]]
    assert [(s["out_channels"], s["batch_size"], s["length"]) for s in cpu] == [(8, 8, 2048)]
    assert "level2/31_Conv1d_GroupNorm_Tanh.py: identity accepted" in printed
    assert "graded at 1/8 of the sizes; the reference failed at 1/16 of the sizes" in printed
    assert "num_channels (4) must be divisible" in printed

    guarded = tomllib.loads((tmp_path / "kb-l2-32-device-guarded-scale" / "task.toml").read_text())
    assert [shape.get("hosts") for shape in guarded["grading"]["shapes"]] == [["gpu"]]
    statement = (tmp_path / "kb-l2-32-device-guarded-scale" / "statement.md").read_text()
    assert "GPU-only (the reference needs a GPU on this host" in statement
    assert "Torch not compiled with CUDA" in statement
    assert "level2/32_Device_Guarded_Scale.py: GPU-only" in printed

    # Sizes in a list (joined to others with list arithmetic) shrink and stay a list.
    mlp = tomllib.loads((tmp_path / "kb-l3-2-shallow-wide-mlp" / "task.toml").read_text())
    cpu = [s for s in mlp["grading"]["shapes"] if s.get("hosts") == ["cpu"]]
    assert [s["hidden_layer_sizes"] for s in cpu] == [[16, 16]]
    assert "level3/2_Shallow_Wide_MLP.py: identity accepted" in printed


def test_relax_writes_larger_cpu_sizes_for_timing(tmp_path):
    """``--relax N`` shrinks the CPU shape set 2**N times less (calls long enough to
    time on a CPU host); the target-hardware sizes stay as published."""
    from graders.kernel.spec import GradingSpec

    problem = FIXTURES / "kernelbench" / "level2" / "21_Conv2d_BiasAdd_Scale_Sigmoid.py"
    specs = {}
    for relax in (0, 2):
        out = tmp_path / f"relax{relax}"
        call_command(
            "import_kernelbench", str(problem), "--level", "2", "--out", str(out),
            "--no-import", "--relax", str(relax),
        )  # fmt: skip
        specs[relax] = GradingSpec.from_bundle_dir(out / "kb-l2-21-conv2d-biasadd-scale-sigmoid")
    plain, relaxed = (specs[relax].shapes_for("cpu")[0].params for relax in (0, 2))
    assert relaxed["out_channels"] == 4 * plain["out_channels"]
    assert relaxed["batch_size"] == 4 * plain["batch_size"]
    assert specs[0].shapes[0].params == specs[2].shapes[0].params  # the published sizes
