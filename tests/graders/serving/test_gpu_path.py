"""The serving grader's GPU path, as far as a CPU host takes it.

What runs here: which devices a grading uses for a task's hardware, the engine
arguments the platform adds on a GPU (checked by vLLM's own parser, so that a GPU
grading cannot die on an argument the engine does not know), the engine's sandbox
asking for the device, a GPU task graded on this CPU host (``needs_hardware``, with
nothing started), and the worker images holding vLLM's CUDA build
(tests/platform/test_platform_files.py). What does not run here: a GPU engine
serving a workload; ``bench/gpu_serving.py`` does that on a GPU host.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from graders.serving.check import check_config
from graders.serving.devices import GPU_SHARE, grading_gpus, platform_flags
from graders.serving.engine import Engine
from graders.serving.kind import ServingKind
from graders.serving.spec import ServingSpec
from sandboxes import get_backend
from sandboxes.base import SandboxUnavailable
from tests.graders.serving.test_spec import FILES, MANIFEST

H200 = {"name": "NVIDIA H200", "count": 1, "memory_bytes": 150_000_000_000}


@pytest.mark.parametrize(
    ("hardware", "gpu", "expected"),
    [
        ("cpu", None, ()),
        ("cpu", H200, ()),
        ("h200", H200, (0,)),
        ("h200", None, "this task's engines need a h200 GPU; this host has no GPU"),
        ("h100", H200, "this task's engines need a h100 GPU; this host has a NVIDIA H200"),
    ],
)
def test_a_grading_uses_the_device_of_its_tasks_class_or_says_why_not(
    hardware, gpu, expected
) -> None:
    assert grading_gpus(hardware, gpu) == expected


def test_on_a_gpu_the_two_engines_share_the_device_each_with_the_tasks_kv_cache() -> None:
    spec = ServingSpec.from_manifest(MANIFEST, FILES)
    assert platform_flags(spec, ()) == {"kv_cache_memory_bytes": spec.kv_cache_bytes}
    flags = platform_flags(spec, (0,))
    assert flags == {"kv_cache_memory_bytes": spec.kv_cache_bytes, "gpu_memory_utilization": 0.45}
    assert 2 * GPU_SHARE < 1


def test_vllm_knows_the_arguments_the_platform_adds_on_a_gpu(model_dir: Path) -> None:
    spec = ServingSpec.from_manifest(MANIFEST, FILES)
    check = check_config(
        {"max_num_seqs": 4},
        spec.policy,
        fixed={**spec.fixed, **platform_flags(spec, (0,))},
        model_dir=model_dir,
        kv_cache_bytes=spec.kv_cache_bytes,
    )
    assert check.ok, check.errors


def test_a_gpu_engines_sandbox_asks_for_the_device(model_dir: Path) -> None:
    backend = get_backend("bwrap")
    request = Engine("submission", backend, model_dir, gpus=(0,)).run_request()
    assert tuple(request.gpus) == (0,) and request.network == "loopback"
    assert "VLLM_CPU_KVCACHE_SPACE" not in request.env
    if not Path("/dev/nvidia0").exists():  # this host: the sandbox refuses, naming the device
        with pytest.raises(SandboxUnavailable, match="/dev/nvidia0"):
            backend.start(request)


def test_a_gpu_task_on_a_cpu_host_needs_hardware_and_starts_nothing() -> None:
    manifest = copy.deepcopy(MANIFEST)
    manifest["hardware"] = "h200"
    message = {
        "manifest": manifest,
        "task_files": FILES,
        "submission_files": {"engine.toml": "max_num_seqs = 4"},
    }
    report = ServingKind().grade(message, backend_name="bwrap")
    assert report["verdict"] == "needs_hardware"
    assert report["reason"] == "this task's engines need a h200 GPU; this host has no GPU"
    assert "serving" not in report or not report["serving"].get("reference", {}).get("runs")


def _gpu_check_script():
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "bench" / "gpu_serving.py"
    spec = importlib.util.spec_from_file_location("gpu_serving", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gpu_check_grades_the_catalog_task_as_a_gpu_task() -> None:
    script = _gpu_check_script()
    message = script.message("h200", 40.0, 80)
    spec = ServingSpec.from_manifest(message["manifest"], message["task_files"])
    assert message["manifest"]["hardware"] == "h200"
    assert (spec.objective, spec.workload.rate, spec.workload.requests) == ("goodput", 40.0, 80)
    assert (
        message["submission_files"]["engine.toml"] == message["task_files"]["solution/engine.toml"]
    )


def test_the_gpu_check_says_so_on_a_host_without_a_gpu() -> None:
    import subprocess
    import sys

    if Path("/dev/nvidia0").exists():
        pytest.fail("this host has a GPU: run bench/gpu_serving.py itself")
    script = Path(__file__).resolve().parents[3] / "bench" / "gpu_serving.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode == 2 and "no CUDA device" in done.stdout
