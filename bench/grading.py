"""What one grading costs, what the sandbox adds, and how repeatable a CPU speedup is.

    .venv/bin/python bench/grading.py [--runs 3] [--repeats 10] [--throughput 8]
                                      [--only latency,throughput,repeatability,debugging]

1. Latency of one grading of a small and a large task (plain PyTorch
   solution, 10 timed batches a side so every grading does the same work),
   split into sandbox start, imports, reference phase, submission phase and
   comparison, and what one timed call costs in CPU time: the call itself
   and the handover between the grader and the process around it; the same
   gradings with the harness run without any sandbox (``Unsandboxed``,
   development only) give the sandbox's overhead as a share of a grading.
2. Gradings per minute of the small task with two gradings at a time (one per
   core on a 2-core host), against one at a time.
3. Repeatability: the same honest C++ ``load_inline`` submission (fused
   add+ReLU with OpenMP) graded ``--repeats`` times; the spread of its speedup
   (max/min). Every grading builds the extension again (~20 s).
4. Latency of one debugging grading (the expert fix of a catalog task, graded
   ``--runs`` times), split into patch (checking and applying both fixes),
   sandbox start (until each runner process is ready, torch imported),
   tests (running them on both trees) and comparison, for a single-process
   task (``debug-softmax-overflow``) and one whose tests start two and three
   gloo ranks over the sandbox's loopback (``debug-gloo-skipped-collective``).

Needs root (the bwrap backend). Prints the figures and writes
bench/results/grading.json (the sections run replace theirs there). The
host's load average is recorded with each section: on a shared machine the
figures move with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.debugging.grading import grade as grade_fix  # noqa: E402
from graders.debugging.spec import DebugSpec  # noqa: E402
from graders.files import read_bundle  # noqa: E402
from graders.kernel.grading import grade  # noqa: E402
from graders.kernel.report import GradeReport, Verdict  # noqa: E402
from graders.kernel.spec import GradingSpec, ShapeSet, TimingSettings  # noqa: E402
from sandboxes import get_backend  # noqa: E402
from sandboxes.base import Limits, Sandbox  # noqa: E402
from sandboxes.unsandboxed import Unsandboxed  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "grading.json"
PHASES = ("sandbox_start", "imports", "reference_phase", "submission_phase", "comparison")
CATALOG = ROOT / "reference_solutions"
DEBUGGING_TASKS = {
    "single_process": "debug-softmax-overflow",
    "gloo_ranks": "debug-gloo-skipped-collective",
}
DEBUGGING_PHASES = ("patch", "sandbox_start", "tests", "compare")

REFERENCE = """
import torch
import torch.nn as nn

rows = 64
cols = 256


class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""

PYTORCH_SOLUTION = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.add(a, b).clamp_min_(0.0)
"""

CPP_SOLUTION = (ROOT / "tests" / "graders" / "kernel" / "exploits" / "honest_cpp.py").read_text()

TIMING = TimingSettings(
    warmup=3, min_batches=5, max_batches=30, target_rel_error=0.02, budget_s=5.0
)
# Latency compares backends on the same work: a fixed number of batches, no early stop.
FIXED = TimingSettings(
    warmup=3, min_batches=10, max_batches=10, target_rel_error=0.001, budget_s=60.0
)


def task(name: str, rows: int, cols: int) -> GradingSpec:
    return GradingSpec(
        format="kernelbench",
        language="cpp",
        reference_path="reference.py",
        files={"reference.py": REFERENCE},
        shapes=[ShapeSet(name, {"rows": rows, "cols": cols})],
        timing=TIMING,
        slug=f"bench-add-relu-{name}",
    )


TASKS = {"small": task("small", 64, 256), "large": task("large", 1024, 1024)}


def run(spec: GradingSpec, solution: str, backend: Sandbox) -> GradeReport:
    report = grade(spec, {"solution.py": solution}, backend=backend, limits=Limits())
    if report.verdict != Verdict.ACCEPTED:
        raise SystemExit(f"bench grading was not accepted: {report.verdict.value}: {report.reason}")
    return report


def latency(backend: Sandbox, unsafe: Sandbox, runs: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, base in TASKS.items():
        spec = dataclasses.replace(base, timing=FIXED)
        per_backend: dict[str, dict[str, Any]] = {}
        for label, chosen in (("bwrap", backend), ("unsandboxed", unsafe)):
            reports = [run(spec, PYTORCH_SOLUTION, chosen) for _ in range(runs)]
            per_backend[label] = {
                "duration_s": statistics.median(r.duration_s for r in reports),
                "phases_s": {
                    p: statistics.median(r.phases.get(p, 0.0) for r in reports) for p in PHASES
                },
                "speedups": [r.speedup for r in reports],
                "per_call_s": per_call(reports),
            }
        sandboxed, bare = (
            per_backend["bwrap"]["duration_s"],
            per_backend["unsandboxed"]["duration_s"],
        )
        figures[name] = {
            **per_backend,
            "sandbox_overhead_s": sandboxed - bare,
            "sandbox_overhead_share": (sandboxed - bare) / sandboxed,
            "sandboxed_over_unsandboxed": sandboxed / bare,
        }
    return figures


def per_call(reports: list[GradeReport]) -> dict[str, float]:
    """What a timed call costs the reference's process: CPU time, the part its own
    clock sees (the call itself), and the rest (handing the call over)."""
    witness = [r.timing.witness for r in reports if r.timing]
    cpu = statistics.median(w["cpu_per_call_median_s"]["reference"] for w in witness)
    inside = statistics.median(w["inside_per_call_median_s"]["reference"] for w in witness)
    return {"cpu": cpu, "call": inside, "handover": max(0.0, cpu - inside)}


def throughput(backend: Sandbox, count: int) -> dict[str, Any]:
    figures = {}
    for workers in (1, 2):
        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            reports = list(
                pool.map(lambda _: run(TASKS["small"], PYTORCH_SOLUTION, backend), range(count))
            )
        elapsed = time.monotonic() - began
        figures[f"{workers}_at_a_time"] = {
            "gradings": len(reports),
            "elapsed_s": elapsed,
            "gradings_per_minute": 60.0 * len(reports) / elapsed,
        }
    return figures


def repeatability(backend: Sandbox, repeats: int) -> dict[str, Any]:
    reports = [run(TASKS["large"], CPP_SOLUTION, backend) for _ in range(repeats)]
    speedups = [r.speedup for r in reports if r.speedup is not None]
    return {
        "task": "large (1024x1024 fp32 add+ReLU), C++ load_inline with OpenMP",
        "speedups": speedups,
        "max_over_min": max(speedups) / min(speedups),
        "significant": [r.timing.significant for r in reports if r.timing],
        "timing_mode": reports[0].timing_mode,
        "duration_s_median": statistics.median(r.duration_s for r in reports),
    }


def debugging(backend: Sandbox, runs: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for label, slug in DEBUGGING_TASKS.items():
        manifest, files = read_bundle(CATALOG / slug)
        spec = DebugSpec.from_manifest(manifest, files)
        fix = {"fix.diff": files[spec.solution]}
        reports = []
        for _ in range(runs):
            report = grade_fix(spec, files, fix, backend)
            if report["verdict"] != "accepted":
                raise SystemExit(f"{slug}: the expert fix was not accepted: {report['reason']}")
            reports.append(report)
        figures[label] = {
            "task": slug,
            "network": spec.network,
            "tests": len(spec.all_tests),
            "runner_processes": reports[0]["processes"],
            "duration_s": statistics.median(r["duration_s"] for r in reports),
            "phases_s": {
                p: statistics.median(r["phases_s"].get(p, 0.0) for r in reports)
                for p in DEBUGGING_PHASES
            },
            # The fix's side, as its runner timed each test (ranks started, joined).
            "per_test_s_median": statistics.median(
                t["seconds"] for r in reports for t in r["tests"]
            ),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=3, help="gradings per task and backend for latency"
    )
    parser.add_argument(
        "--throughput", type=int, default=8, help="gradings per throughput measurement"
    )
    parser.add_argument("--repeats", type=int, default=10, help="gradings of the C++ submission")
    parser.add_argument(
        "--only",
        default="latency,throughput,repeatability,debugging",
        help="comma-separated sections to run",
    )
    args = parser.parse_args()
    backend = get_backend("bwrap")
    backend.check()
    unsafe = Unsandboxed(allow_unsafe=True)
    results: dict[str, Any] = {
        "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "timing_settings": {"latency": FIXED.__dict__, "other": TIMING.__dict__},
    }
    sections = {
        "latency": (lambda: latency(backend, unsafe, args.runs), report_latency),
        "throughput": (lambda: throughput(backend, args.throughput), report_throughput),
        "repeatability": (lambda: repeatability(backend, args.repeats), report_repeatability),
        "debugging": (lambda: debugging(backend, args.runs), report_debugging),
    }
    for name in args.only.split(","):
        measure, report = sections[name]
        load_before = os.getloadavg()
        results[name] = measure()
        results[name]["load_average"] = {"before": load_before, "after": os.getloadavg()}
        report(results[name])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    # Sections not run this time keep their last figures.
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.write_text(json.dumps({**previous, **results}, indent=2))
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


def report_latency(figures: dict[str, Any]) -> None:
    print("latency of one grading (median), seconds")
    for name in TASKS:
        data = figures[name]
        for label in ("bwrap", "unsandboxed"):
            phases = "  ".join(f"{p} {v:.2f}" for p, v in data[label]["phases_s"].items())
            print(f"  {name:5s} {label:11s} total {data[label]['duration_s']:.2f}  {phases}")
            call = data[label]["per_call_s"]
            print(
                f"  {'':5s} {'':11s} a timed call of the reference: {1e3 * call['cpu']:.3f} ms "
                f"CPU = {1e3 * call['call']:.3f} ms in the call + "
                f"{1e3 * call['handover']:.3f} ms handing it over"
            )
        print(
            f"  {name:5s} sandbox overhead {data['sandbox_overhead_s']:.2f} s = "
            f"{100 * data['sandbox_overhead_share']:.1f}% of a grading "
            f"(ratio {data['sandboxed_over_unsandboxed']:.2f})"
        )


def report_throughput(figures: dict[str, Any]) -> None:
    print("throughput, small task")
    for label in ("1_at_a_time", "2_at_a_time"):
        data = figures[label]
        print(
            f"  {label}: {data['gradings_per_minute']:.1f} gradings/min "
            f"({data['gradings']} in {data['elapsed_s']:.1f} s)"
        )


def report_repeatability(figures: dict[str, Any]) -> None:
    speedups = ", ".join(f"{s:.3f}" for s in figures["speedups"])
    print(f"repeatability, {figures['task']}: speedups {speedups}")
    print(f"  max/min {figures['max_over_min']:.3f}; timing mode {figures['timing_mode']}")


def report_debugging(figures: dict[str, Any]) -> None:
    print("latency of one debugging grading, the expert fix (median), seconds")
    for label in DEBUGGING_TASKS:
        data = figures[label]
        phases = "  ".join(f"{p} {v:.2f}" for p, v in data["phases_s"].items())
        print(f"  {label:14s} total {data['duration_s']:.2f}  {phases}")
        print(
            f"  {'':14s} {data['task']}: {data['tests']} tests a side, "
            f"{data['runner_processes']} runner processes, network {data['network']}, "
            f"{data['per_test_s_median']:.3f} s per test"
        )


if __name__ == "__main__":
    main()
