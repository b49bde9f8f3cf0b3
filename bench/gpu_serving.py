"""GPU check of the serving kind, for a GPU grading host (run there by hand, or by the
GPU worker image; CI has no GPU).

Grades the catalog's serve-shared-prefix task on this host's GPU, through the
kind's own entry point (``ServingKind.grade``, as a worker does): the task's
hardware is set to this host's GPU class, so the grader gives both engines the
device (``devices.grading_gpus``), adds the platform's GPU arguments
(``kv_cache_memory_bytes``, ``gpu_memory_utilization``: the two engines share the
device) and starts vLLM's CUDA build from the serving environment
(``BENCHWRIGHT_SERVING_VENV``) in the bubblewrap sandbox with the device passed
in. The expert config (prefix caching) must be accepted and beat the reference.
Prints the phases, both sides' figures and vLLM's resolved engine settings.

    python bench/gpu_serving.py [--rate 40] [--requests 80]

Exit status 0 when the grading ran on the GPU and the expert config won.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.serving.kind import MUST_BEAT, ServingKind  # noqa: E402

TASK = ROOT / "reference_solutions" / "serve-shared-prefix"


def message(hardware: str, rate: float, requests: int) -> dict:
    """The task's grading message as the platform sends it, targeting ``hardware``, at a
    fixed rate a GPU is tested at (the catalog's ladder is sized for a 2-core CPU)."""
    manifest = tomllib.loads((TASK / "task.toml").read_text())
    manifest["hardware"] = hardware
    grading = manifest["grading"]
    grading["objective"] = {"kind": "goodput"}
    grading["workload"] = {**grading["workload"], "rate": rate, "requests": requests}
    files = {
        entry["path"]: (TASK / entry["path"]).read_text() for entry in manifest.get("files", [])
    }
    return {
        "manifest": manifest,
        "task_files": files,
        "submission_files": {"engine.toml": files["solution/engine.toml"]},
        "overrides": {MUST_BEAT: True},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=40.0)
    parser.add_argument("--requests", type=int, default=80)
    args = parser.parse_args()

    from sandboxes.hardware import detect, gpu_class

    gpu = detect().get("gpu")
    if not gpu:
        print("no CUDA device on this host: nothing to check")
        return 2
    hardware = gpu_class(gpu["name"]) or "gpu"
    print(f"GPU: {gpu['name']} ({hardware}), driver {gpu.get('driver')}, CUDA {gpu.get('cuda')}")
    report = ServingKind().grade(message(hardware, args.rate, args.requests), backend_name="bwrap")
    serving = report.get("serving") or {}
    print(f"verdict: {report['verdict']}: {report['reason']}")
    print(f"duration: {report.get('duration_s')} s, phases: {serving.get('phases_s')}")
    print(f"goodput ratio: {serving.get('goodput_ratio')} {serving.get('goodput_ratio_ci')}")
    for role in ("reference", "submission"):
        side = serving.get(role) or {}
        runs = [
            (run.get("figures", {}).get("request_goodput"), run.get("attainment"))
            for run in side.get("runs") or []
        ]
        print(f"{role}: (goodput, attainment) per run {runs}")
        print(f"{role}: vLLM resolved {json.dumps(side.get('engine') or {}, sort_keys=True)}")
    return 0 if report["verdict"] == "accepted" else 1


if __name__ == "__main__":
    raise SystemExit(main())
