"""GradingSpec: parsing and validating ``[grading]``, bundles and bare problem files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graders.kernel.spec import (
    DEFAULT_TOLERANCES,
    GradingSpec,
    ShapeSet,
    SpecError,
    Tolerance,
    detect_format,
)
from sandboxes.base import Limits

EXPLOITS = Path(__file__).parent / "exploits"

KERNELBENCH_REFERENCE = """
import torch
import torch.nn as nn

batch_size = 4
dim = 16

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""

GPUMODE_REFERENCE = """
import torch
from task import input_t

def generate_input(size: int, seed: int):
    return (torch.randn(size, generator=torch.Generator().manual_seed(seed)),)

def ref_kernel(data):
    return data[0] * 2
"""


def manifest(**grading: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "slug": "row-softmax",
        "kind": "kernel",
        "hardware": "h100",
        "grading": {"format": "kernelbench", "language": "triton"},
        "files": [
            {"path": "statement.md", "visibility": "prompt", "role": "statement"},
            {"path": "reference.py", "visibility": "hidden", "role": "reference"},
            {"path": "solution.py", "visibility": "hidden", "role": "solution"},
            {"path": "helpers.py", "visibility": "prompt", "role": "other"},
            {"path": "hidden_test.py", "visibility": "hidden", "role": "test"},
        ],
    }
    base["grading"].update(grading)
    return base


FILES = {
    "statement.md": "Softmax.",
    "reference.py": KERNELBENCH_REFERENCE,
    "solution.py": "class ModelNew: ...",
    "helpers.py": "BLOCK = 128",
    "hidden_test.py": "CASES = []",
}


def error_for(**grading: Any) -> str:
    with pytest.raises(SpecError) as caught:
        GradingSpec.from_manifest(manifest(**grading), FILES)
    return str(caught.value)


def test_full_grading_section_is_parsed() -> None:
    spec = GradingSpec.from_manifest(
        manifest(
            trials=7,
            seed_inputs=False,
            shapes=[
                {"name": "small", "batch_size": 4, "dim": 1000},
                {"name": "cpu", "hosts": ["cpu"], "batch_size": 2, "dim": 64, "scale": 1000.0},
            ],
            tolerances={"float16": {"atol": 1e-3, "rtol": 2e-3}},
            timing={"warmup": 2, "min_batches": 4, "max_batches": 9, "budget_s": 3, "shape": "cpu"},
            limits={"wall_time_s": 300},
        ),
        FILES,
    )
    assert (spec.format, spec.language, spec.trials, spec.seed_inputs) == (
        "kernelbench",
        "triton",
        7,
        False,
    )
    assert spec.shapes[1] == ShapeSet(
        "cpu", {"batch_size": 2, "dim": 64, "scale": 1000.0}, ("cpu",)
    )
    assert [s.name for s in spec.shapes_for("gpu")] == ["small"]
    assert [s.name for s in spec.shapes_for("cpu")] == ["small", "cpu"]
    assert spec.tolerance_for("float16") == Tolerance(1e-3, 2e-3)
    assert spec.tolerance_for("float32") == DEFAULT_TOLERANCES["float32"]
    assert spec.tolerance_for("int64") == Tolerance(0.0, 0.0)
    assert (spec.timing.warmup, spec.timing.max_batches, spec.timing.shape) == (2, 9, "cpu")
    assert spec.effective_limits(Limits()).wall_time_s == 300
    assert spec.hardware == "h100"


def test_hidden_and_prompt_files_go_to_the_right_side() -> None:
    spec = GradingSpec.from_manifest(manifest(), FILES)
    assert spec.reference_path == "reference.py"
    assert set(spec.files) == {"reference.py", "helpers.py", "hidden_test.py"}
    # Only what a solver may see goes beside a submission: never the reference or hidden tests.
    assert set(spec.shared_files) == {"helpers.py"}


def test_defaults_when_grading_is_minimal() -> None:
    spec = GradingSpec.from_manifest(manifest(), FILES)
    assert spec.trials == 5
    assert spec.shapes == [ShapeSet("default", {})]
    assert spec.timing.target_rel_error == 0.02


@pytest.mark.parametrize(
    ("grading", "message"),
    [
        (
            {"tolerances": {"float16": {"atol": -1, "rtol": 0}}},
            "grading.tolerances.float16.atol: must be a non-negative number",
        ),
        (
            {"tolerances": {"float16": {"atol": "tiny", "rtol": 0}}},
            "grading.tolerances.float16.atol: must be a non-negative number",
        ),
        ({"tolerances": {"float16": {"atol": 0.1}}}, "grading.tolerances.float16.rtol: missing"),
        (
            {"tolerances": {"float17": {"atol": 0.1, "rtol": 0.1}}},
            "grading.tolerances.float17: unknown dtype",
        ),
        ({"trials": 3}, "grading.trials: must be between 5 and 1000"),
        ({"trials": True}, "grading.trials: must be an integer"),
        ({"format": "tritonbench"}, "grading.format: must be one of kernelbench, gpumode"),
        ({"language": "rust"}, "grading.language: must be one of"),
        ({"seed_inputs": "yes"}, "grading.seed_inputs: must be true or false"),
        ({"shapes": []}, "grading.shapes: must list at least one shape set"),
        (
            {"shapes": [{"name": "a"}, {"name": "a"}]},
            "grading.shapes[1].name: 'a' is used by another shape set",
        ),
        (
            {"shapes": [{"name": "a", "hosts": ["tpu"]}]},
            "grading.shapes[0].hosts: must be one of cpu, gpu",
        ),
        (
            {"shapes": [{"name": "a", "dim": {"x": 1}}]},
            "grading.shapes[0].dim: must be a number, string",
        ),
        ({"shapes": [{"name": "a", "2d": 1}]}, "grading.shapes[0].2d: must be a Python identifier"),
        ({"timing": {"budget_s": 0}}, "grading.timing.budget_s: must be a positive number"),
        (
            {"timing": {"min_batches": 5, "max_batches": 2}},
            "grading.timing.max_batches: must be at least min_batches",
        ),
        ({"timing": {"shape": "huge"}}, "grading.timing.shape: no shape set is named 'huge'"),
        ({"timing": {"warmups": 3}}, "grading.timing.warmups: unknown key"),
        ({"limits": {"wall_time_s": 10**9}}, "grading.limits: limit 'wall_time_s'"),
        ({"limits": {"gpu_count": 2}}, "grading.limits: unknown limit 'gpu_count'"),
        ({"speedup": 2}, "grading.speedup: unknown key"),
    ],
)
def test_invalid_grading_settings_name_the_field(grading: dict[str, Any], message: str) -> None:
    assert message in error_for(**grading)


def test_gpumode_seed_is_reserved_in_shapes() -> None:
    files = {**FILES, "reference.py": GPUMODE_REFERENCE}
    data = manifest(format="gpumode", shapes=[{"name": "a", "size": 4, "seed": 1}])
    with pytest.raises(SpecError, match=r"grading.shapes\[0\].seed: is reserved"):
        GradingSpec.from_manifest(data, files)


def test_missing_reference_or_listed_file_is_an_error() -> None:
    data = manifest()
    data["files"] = [f for f in data["files"] if f["role"] != "reference"]
    with pytest.raises(
        SpecError,
        match=r"files: a kernel task needs exactly one file with role reference \(found 0\)",
    ):
        GradingSpec.from_manifest(data, FILES)
    with pytest.raises(
        SpecError, match=r"files\[1\].path: 'reference.py' is listed but was not provided"
    ):
        GradingSpec.from_manifest(
            manifest(), {k: v for k, v in FILES.items() if k != "reference.py"}
        )


def test_non_kernel_task_is_refused() -> None:
    data = manifest()
    data["kind"] = "profiling"
    with pytest.raises(SpecError, match="kind: kernel grading needs kind = 'kernel'"):
        GradingSpec.from_manifest(data, FILES)


def test_spec_survives_a_trip_through_json() -> None:
    spec = GradingSpec.from_bundle_dir(EXPLOITS / "problems" / "addrelu")
    travelled = GradingSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert travelled == spec
    assert travelled.shapes[2].hosts == ("cpu",)
    assert "reference.py" in travelled.files


def test_bundle_folder_is_read_with_its_files() -> None:
    spec = GradingSpec.from_bundle_dir(EXPLOITS / "problems" / "rowsum")
    assert spec.format == "gpumode"
    assert set(spec.files) == {"reference.py", "task.py"}
    assert set(spec.shared_files) == {"task.py"}
    assert [s.name for s in spec.shapes] == ["square", "ragged"]


def test_bundle_folder_with_a_bad_toml_says_so(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text("[grading\nformat=1")
    with pytest.raises(SpecError, match=r"task\.toml: not valid TOML"):
        GradingSpec.from_bundle_dir(tmp_path)


def test_bundle_file_outside_the_folder_is_refused(tmp_path: Path) -> None:
    toml = '[grading]\nformat = "kernelbench"\nlanguage = "cpp"\n'
    (tmp_path / "task.toml").write_text(
        toml + '[[files]]\npath = "../etc/passwd"\nrole = "reference"\n'
    )
    with pytest.raises(SpecError, match="points outside the bundle"):
        GradingSpec.from_bundle_dir(tmp_path)


def test_bare_kernelbench_file_gets_default_shape_and_tolerances(tmp_path: Path) -> None:
    path = tmp_path / "level1_softmax.py"
    path.write_text(KERNELBENCH_REFERENCE)
    spec = GradingSpec.from_problem_file(path)
    assert (spec.format, spec.reference_path, spec.slug) == (
        "kernelbench",
        "level1_softmax.py",
        "level1_softmax",
    )
    assert spec.shapes == [ShapeSet("default", {})]
    assert spec.tolerances == DEFAULT_TOLERANCES


def test_bare_gpumode_file_takes_its_task_module_along(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text("input_t = tuple")
    path = tmp_path / "reference.py"
    path.write_text(
        GPUMODE_REFERENCE.replace("size: int, seed: int", "size: int = 8, seed: int = 0")
    )
    spec = GradingSpec.from_problem_file(path)
    assert spec.format == "gpumode"
    assert set(spec.files) == {"reference.py", "task.py"}
    assert set(spec.shared_files) == {"task.py"}


def test_bare_gpumode_file_needing_sizes_asks_for_a_bundle(tmp_path: Path) -> None:
    path = tmp_path / "reference.py"
    path.write_text(GPUMODE_REFERENCE)
    with pytest.raises(SpecError, match=r"grading.shapes: generate_input\(\) needs size"):
        GradingSpec.from_problem_file(path)


def test_file_in_neither_format_is_refused() -> None:
    with pytest.raises(SpecError, match="neither KernelBench"):
        detect_format("def forward(x):\n    return x\n")
    with pytest.raises(SpecError, match="reference: not valid Python"):
        detect_format("def (")
