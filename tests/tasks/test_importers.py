"""Importers for the two public problem formats, on small fixtures written for these tests."""

import tomllib
from pathlib import Path

import pytest

from graders.kernel.harness.runner import Problem, import_file, reevaluate
from tasks.importers import (
    CPU_ELEMENT_BUDGET,
    ProblemFormatError,
    find_gpumode_folders,
    find_kernelbench_files,
    import_gpumode_folder,
    import_kernelbench_file,
    scale_sizes,
)

FIXTURES = Path(__file__).parent / "fixtures"
ROW_SUM = FIXTURES / "kernelbench" / "level1" / "3_Row_Sum.py"
LINEAR = FIXTURES / "kernelbench" / "level2" / "12_Linear_Bias_Relu.py"
VECTOR_SCALE = FIXTURES / "gpumode" / "vector_scale_py"
LUMA = FIXTURES / "gpumode" / "luma_py"


def manifest_of(bundle):
    return tomllib.loads(bundle.files["task.toml"])


def test_small_sizes_are_left_alone():
    assert scale_sizes({"batch_size": 4, "dim": 100}) == {}


def test_gpu_sizes_shrink_by_one_factor_within_the_budget():
    scaled = scale_sizes({"batch_size": 4096, "dim": 393216, "kernel_size": 3})

    assert set(scaled) == {"batch_size", "dim"}, "parameters below the size threshold stay"
    assert scaled["batch_size"] * scaled["dim"] <= CPU_ELEMENT_BUDGET
    assert scaled["dim"] * 4096 == 393216 * scaled["batch_size"], "ratios between sizes stay"


def test_relations_between_sizes_survive_the_shrink():
    """A transposed convolution's output width (2 * W) equals out_channels on the GPU
    sizes, and a LayerNorm over the last axis relies on it: it must hold scaled down."""
    scaled = scale_sizes(
        {"batch_size": 32, "in_channels": 32, "out_channels": 64, "D": 16, "H": 32, "W": 32}
    )

    assert 2 * scaled["W"] == scaled["out_channels"]


def test_a_kernelbench_problem_keeps_gpu_shapes_and_gets_a_cpu_set():
    bundle = import_kernelbench_file(ROW_SUM, level=1)
    manifest = manifest_of(bundle)

    assert bundle.slug == "kb-l1-3-row-sum"
    assert manifest["grading"]["format"] == "kernelbench"
    gpu, cpu = manifest["grading"]["shapes"]
    assert gpu == {"name": "original", "hosts": ["gpu"]}
    assert cpu["hosts"] == ["cpu"]
    assert cpu["batch_size"] * cpu["dim"] <= CPU_ELEMENT_BUDGET
    assert manifest["tags"] == ["kernelbench", "level1"]
    assert manifest["difficulty"] == "easy"


def test_hard_coded_cuda_placement_is_removed_and_noted():
    bundle = import_kernelbench_file(ROW_SUM, level=1)

    assert ".cuda()" not in bundle.files["reference.py"]
    assert any("cuda" in note for note in bundle.notes)


def test_the_generated_statement_shows_interface_shapes_and_reference():
    bundle = import_kernelbench_file(LINEAR, level=2)
    statement = bundle.files["statement.md"]

    assert "class ModelNew(nn.Module)" in statement
    assert "`in_features = 4096`" in statement
    assert "self.linear = nn.Linear(in_features, out_features)" in statement
    assert "atol" in statement


def test_the_default_rubric_has_automatic_and_human_criteria():
    rubric = manifest_of(import_kernelbench_file(LINEAR, level=2))["rubric"]["criteria"]
    kinds = {c["id"]: c["kind"] for c in rubric}

    assert kinds["correct"] == "automatic"
    assert kinds["clarity"] == "human"
    assert any(c["points"] < 0 for c in rubric), "an integrity penalty"
    assert all(c["levels"] for c in rubric if c["kind"] == "human")


def test_a_gpumode_problem_maps_tests_and_benchmarks_to_shapes():
    bundle = import_gpumode_folder(VECTOR_SCALE)
    shapes = manifest_of(bundle)["grading"]["shapes"]

    gpu = [s for s in shapes if s["hosts"] == ["gpu"]]
    cpu = [s for s in shapes if s["hosts"] == ["cpu"]]
    assert [s["size"] for s in gpu] == [1024, 100003, 67108864]
    assert [s["size"] for s in cpu] == [1024, 25000]
    assert all("seed" not in s for s in shapes), "seeds are chosen per grading, never fixed"
    assert bundle.slug == "gpumode-vector-scale"
    assert "Multiply a vector by a scalar." in bundle.files["statement.md"]


def test_finding_problems_in_a_tree_respects_the_level():
    root = FIXTURES / "kernelbench"
    assert [p.name for p, _ in find_kernelbench_files(root, level=2)] == [
        LINEAR.name,
        "21_Conv2d_BiasAdd_Scale_Sigmoid.py",
    ]
    assert {level for _, level in find_kernelbench_files(root, level=None)} == {1, 2}
    assert find_gpumode_folders(FIXTURES / "gpumode") == [LUMA, VECTOR_SCALE]


def test_a_file_without_the_kernelbench_entry_points_is_refused(tmp_path):
    bad = tmp_path / "1_Nothing.py"
    bad.write_text("import torch\n\nclass Model:\n    pass\n")

    with pytest.raises(ProblemFormatError, match=r"1_Nothing.py.*get_init_inputs, get_inputs"):
        import_kernelbench_file(bad, level=1)


def test_a_gpumode_folder_with_broken_yaml_names_the_file(tmp_path):
    folder = tmp_path / "broken_py"
    folder.mkdir()
    (folder / "reference.py").write_text((VECTOR_SCALE / "reference.py").read_text())
    (folder / "task.yml").write_text("tests: [ {size: 1\n")

    with pytest.raises(ProblemFormatError, match=r"task\.yml: not valid YAML"):
        import_gpumode_folder(folder)


def test_written_bundles_contain_every_file(tmp_path):
    bundle = import_gpumode_folder(VECTOR_SCALE)

    folder = bundle.write(tmp_path)

    assert sorted(p.name for p in folder.iterdir()) == ["reference.py", "statement.md", "task.toml"]


CONV_DERIVED = FIXTURES / "kernelbench" / "level2" / "21_Conv2d_BiasAdd_Scale_Sigmoid.py"


def test_chained_size_assignments_are_scaled_too():
    cpu = manifest_of(import_kernelbench_file(CONV_DERIVED, level=2))["grading"]["shapes"][1]

    assert cpu["height"] == cpu["width"] < 256, "`height = width = 256` sets both sizes"
    assert cpu["out_channels"] < 64 and "kernel_size" not in cpu


def test_the_reference_is_evaluated_again_with_a_shape_sets_sizes(tmp_path):
    """Globals derived from a size (``bias_shape = (out_channels, 1, 1)``) follow the
    shape set's value, not the module's own."""
    module = import_file(CONV_DERIVED)

    small = reevaluate(module, {"out_channels": 5, "height": 7, "width": 7, "batch_size": 2})

    assert small.bias_shape == small.scale_shape == (5, 1, 1)
    assert small.get_init_inputs() == [3, 5, 3, (5, 1, 1), (5, 1, 1)]
    assert tuple(small.get_inputs()[0].shape) == (2, 3, 7, 7)
    model = small.Model(*small.get_init_inputs())
    assert tuple(model(*small.get_inputs()).shape) == (2, 5, 5, 5)
    assert module.bias_shape == (64, 1, 1), "the module as imported is left as it was"


def test_sizes_unpacked_from_a_tuple_are_found(tmp_path):
    problem = tmp_path / "7_Conv3d.py"
    problem.write_text(
        CONV_DERIVED.read_text().replace("height = width = 256", "D, height, width = 16, 256, 256")
    )

    cpu = manifest_of(import_kernelbench_file(problem, level=2))["grading"]["shapes"][1]

    assert {"D", "height", "width"} <= set(cpu) and cpu["height"] < 256


def test_a_gpumode_problem_brings_the_modules_its_reference_imports():
    bundle = import_gpumode_folder(LUMA)
    files = {entry["path"]: entry for entry in manifest_of(bundle)["files"]}

    assert bundle.files["utils.py"] == (LUMA.parent / "utils.py").read_text()
    assert bundle.files["task.py"] == (LUMA / "task.py").read_text()
    assert files["utils.py"]["visibility"] == files["task.py"]["visibility"] == "prompt"
    assert "eval.py" not in bundle.files and "submission.py" not in bundle.files


def test_cuda_device_literals_become_the_hosts_device():
    reference = import_gpumode_folder(LUMA).files["reference.py"]

    assert "'cuda'" not in reference and '"cuda"' not in reference.split("\n", 2)[2]
    assert "device=_BENCHWRIGHT_DEVICE" in reference
    assert (
        '_BENCHWRIGHT_DEVICE = "cuda" if _benchwright_torch.cuda.is_available() else "cpu"'
        in (reference.splitlines()[1])
    )


def test_a_listed_file_outside_the_suite_is_refused(tmp_path):
    problem = tmp_path / "suite" / "p_py"
    problem.mkdir(parents=True)
    (problem / "reference.py").write_text((LUMA / "reference.py").read_text())
    (problem / "task.yml").write_text(
        'files:\n  - {"name": "utils.py", "source": "../../secret.py"}\n'
        "tests:\n  - {size: 4, seed: 1}\n"
    )
    (tmp_path / "secret.py").write_text("x = 1\n")

    with pytest.raises(ProblemFormatError, match=r"files\[0\]\.source: .* outside the suite"):
        import_gpumode_folder(problem)


def test_a_listed_file_that_is_missing_is_named(tmp_path):
    problem = tmp_path / "suite" / "p_py"
    problem.mkdir(parents=True)
    (problem / "reference.py").write_text((LUMA / "reference.py").read_text())
    (problem / "task.yml").write_text(
        'files:\n  - {"name": "utils.py", "source": "../utils.py"}\n'
        "tests:\n  - {size: 4, seed: 1}\n"
    )

    with pytest.raises(
        ProblemFormatError, match=r"task.yml: files\[0\]\.source: '../utils.py' does not exist"
    ):
        import_gpumode_folder(problem)


def test_sizes_written_as_arithmetic_or_tuples_are_scaled(tmp_path):
    problem = tmp_path / "4_Matrix_vector.py"
    problem.write_text(
        ROW_SUM.read_text().replace("batch_size = ", "input_shape = (8192,)\nbatch_size = 256 * ")
    )

    cpu = manifest_of(import_kernelbench_file(problem, level=1))["grading"]["shapes"][1]

    assert cpu["batch_size"] < 256 * 8192 and len(cpu["input_shape"]) == 1
    assert cpu["input_shape"][0] < 8192


def test_a_size_tuple_from_a_shape_set_is_a_tuple_again_in_the_reference(tmp_path):
    """TOML has no tuples: ``input_shape = [5]`` in a shape set must reach the module
    as ``(5,)``, which code like ``(batch_size, *input_shape)`` or ``shape + (1,)`` needs."""
    path = tmp_path / "reference.py"
    path.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\n\nbatch_size = 64\ninput_shape = (8192,)\n"
        "padded = input_shape + (1,)\n\ndef get_inputs():\n"
        "    return [torch.rand(batch_size, *padded)]\n\ndef get_init_inputs():\n    return []\n"
    )
    problem = Problem(import_file(path), "kernelbench", "reference", "cpu")

    problem.setup({"batch_size": 3, "input_shape": [5]}, init_seed=1, init=None)

    assert problem.module.padded == (5, 1)
    assert tuple(problem.generate(seed=2, seed_inputs=True)[0].shape) == (3, 5, 1)


def test_a_problem_that_cannot_run_on_a_cpu_is_marked_gpu_only_with_the_reason(tmp_path):
    problem = tmp_path / "9_Fp8_Matmul.py"
    problem.write_text(
        ROW_SUM.read_text().replace(
            "return x.sum(dim=1)", "return x.to(torch.float8_e4m3fn).float().sum(dim=1)"
        )
    )

    bundle = import_kernelbench_file(problem, level=1)

    shapes = manifest_of(bundle)["grading"]["shapes"]
    assert shapes == [{"name": "original", "hosts": ["gpu"]}], "no CPU shape set"
    assert "GPU-only: float8 dtypes have no CPU kernels" in bundle.notes
    assert "none: GPU-only (float8 dtypes have no CPU kernels)" in bundle.files["statement.md"]


def test_a_small_problem_has_one_shape_set_for_every_host(tmp_path):
    problem = tmp_path / "1_Tiny.py"
    problem.write_text(ROW_SUM.read_text().replace("8192", "4").replace("65536", "8"))

    shapes = manifest_of(import_kernelbench_file(problem, level=1))["grading"]["shapes"]

    assert shapes == [{"name": "original"}]
