"""What one serving grading costs, phase by phase, and how much its score moves.

    .venv/bin/python bench/serving.py [--gradings 5] [--requests 24] [--rate 10]
    .venv/bin/python bench/serving.py --gradings 3 --requests 30 --submission-seqs 2 \
        --rates 4,5,6,7,8,10,12,14,16,20

Grades the same pair of configs ``--gradings`` times, each a whole serving
grading (``graders.serving.grading``) with real vLLM engines in the bubblewrap
sandbox: a reference that serves one sequence at a time (``--reference-seqs``)
against a submission that batches up to 16 (``--submission-seqs``), on a
random workload of 256-token prompts and 32-token answers: at a fixed rate
faster than one sequence at a time can serve, or (``--rates``) climbing a
ladder of rates for each side's highest sustainable one. Prints per grading
the seconds of each phase (config check, engine start, warm-up, workload,
teardown), the ratio with its interval and each side's runs or climb, then
one line::

    serving: N gradings, median T s (start S s, workload W s), ratio max/min R

The aim on the 2-core development machine is max/min under 1.10 over five
gradings. The host's load average is printed too: the engines share the
machine with whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.serving.grading import grade_serving  # noqa: E402
from graders.serving.models import tiny_model  # noqa: E402
from graders.serving.spec import ServingSpec  # noqa: E402
from graders.serving.tinymodel import Recipe  # noqa: E402
from sandboxes import get_backend  # noqa: E402


def manifest(requests: int, rate: float, runs: int, rates: list[float]) -> dict:
    objective = {"kind": "max_rate", "rates": rates} if rates else {"kind": "goodput"}
    return {
        "kind": "serving",
        "hardware": "cpu",
        "grading": {
            "reference": "reference/engine.toml",
            "allowed": ["max_num_seqs", "max_model_len"],
            "fixed": {"dtype": "bfloat16", "enforce_eager": True},
            "runs": runs,
            "model": {"tiny": {}},
            "workload": {
                "dataset": "random",
                "input_len": 256,
                "output_len": 32,
                "rate": rate,
                "requests": requests,
                "warmup": 2,
            },
            "slo": {"ttft_ms": 1500, "tpot_ms": 300, "attainment": 0.8},
            "objective": objective,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gradings", type=int, default=5)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference-seqs", type=int, default=1, help="its max_num_seqs")
    parser.add_argument("--submission-seqs", type=int, default=16, help="its max_num_seqs")
    parser.add_argument(
        "--rates",
        type=lambda text: [float(r) for r in text.split(",")],
        default=[],
        help="a ladder of request rates (objective max_rate), e.g. 2,4,6,8,12,16",
    )
    args = parser.parse_args()
    spec = ServingSpec.from_manifest(
        manifest(args.requests, args.rate, args.runs, args.rates),
        {"reference/engine.toml": "max_num_seqs = 1\n"},
    )
    with tempfile.TemporaryDirectory() as cache:
        model_dir = tiny_model(Recipe(), cache=Path(cache))
        backend = get_backend("bwrap")
        totals, starts, workloads, ratios = [], [], [], []
        print(f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'grading':>7} {'check':>6} {'start':>6} {'warmup':>6} {'work':>6} "
              f"{'down':>5} {'total':>6}  ratio [interval]  verdict")  # fmt: skip
        for index in range(args.gradings):
            began = time.monotonic()
            result = grade_serving(
                spec,
                {"max_num_seqs": args.reference_seqs, "max_model_len": 1024},
                {"max_num_seqs": args.submission_seqs, "max_model_len": 1024},
                model_dir=model_dir,
                backend=backend,
            )
            total = time.monotonic() - began
            phases = result.phases_s
            ratio = result.goodput_ratio or result.rate_ratio or 0.0
            low, high = result.goodput_ratio_ci or result.rate_ratio_ci or (0.0, 0.0)
            print(
                f"{index:>7} {phases.get('config_check', 0):6.1f} "
                f"{phases.get('engine_start', 0):6.1f} {phases.get('warmup', 0):6.1f} "
                f"{phases.get('workload', 0):6.1f} {phases.get('teardown', 0):5.1f} "
                f"{total:6.1f}  {ratio:.3f} [{low:.3f}, {high:.3f}]  {result.verdict}"
            )
            for side in (result.reference, result.submission):
                if side.points:
                    climb = "  ".join(f"{p.rate:g}/s {p.attainment:4.0%}" for p in side.points)
                    print(f"{'':>9}{side.role:<10} max rate {side.max_rate}: {climb}")
                    continue
                runs = "  ".join(
                    f"{run.figures.get('request_goodput', 0.0):5.2f}/s {run.attainment:4.0%}"
                    for run in side.runs
                )
                print(f"{'':>9}{side.role:<10} goodput, attainment per run: {runs}")
            totals.append(total)
            starts.append(phases.get("engine_start", 0.0))
            workloads.append(phases.get("workload", 0.0))
            if ratio > 0:
                ratios.append(ratio)
    spread = max(ratios) / min(ratios) if ratios else float("nan")
    print(f"load average {os.getloadavg()[0]:.2f}")
    start, work = statistics.median(starts), statistics.median(workloads)
    print(
        f"serving: {args.gradings} gradings, median {statistics.median(totals):.1f} s "
        f"(start {start:.1f} s, workload {work:.1f} s), ratio max/min {spread:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
