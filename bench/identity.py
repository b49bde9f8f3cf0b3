"""Identical code is not faster: how often the grader declares a speedup for a
solution that is the reference itself.

    .venv/bin/python bench/identity.py [--runs 3] [--tasks a,b,...] [--jobs 1]
                                       [--bundles DIR] [--sample N]

For every task of the catalog (``reference_solutions/``) and of the exploit
corpus's problems (or, with ``--bundles``, every bundle folder under DIR, such as
the KernelBench problems ``manage.py import_kernelbench --hardware cpu --no-import
--out DIR`` writes at CPU sizes; ``--sample N`` takes N of them, spread evenly
in name order), the *identity solution* is the task's reference with its
entry point renamed (``ModelNew = Model``, or ``custom_kernel = ref_kernel``),
so the submission runs exactly the reference's code in its own sandbox. Each
is graded ``--runs`` times on this host with the real sandbox and grader.
Honest measurement finds no speedup: the grader's test (a 95 % sign-test
interval over at least six paired batches, which must lie wholly beyond a 5 %
margin) should call one significant at most at its nominal rate (2.5 % each
way, far less with the margin), and so never declare one faster than 1.05.

Prints a table (per task: the speedups, how many were significant) and a
summary line, and writes bench/results/identity.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.kernel.grading import grade  # noqa: E402
from graders.kernel.report import Verdict  # noqa: E402
from graders.kernel.spec import GradingSpec, SpecError  # noqa: E402
from sandboxes import get_backend  # noqa: E402
from sandboxes.base import Limits  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "identity.json"
FOLDERS = [
    *sorted((ROOT / "reference_solutions").iterdir()),
    *sorted((ROOT / "tests" / "sandboxes" / "exploits" / "problems").iterdir()),
]


def identity_solution(spec: GradingSpec) -> str:
    """The reference's own source, its entry point renamed for a solution."""
    source = spec.files[spec.reference_path]
    if spec.format == "kernelbench":
        return source + "\n\nModelNew = Model\n"
    return source + "\n\ncustom_kernel = ref_kernel\n"


def grade_identity(folder: Path) -> dict[str, Any]:
    try:
        spec = GradingSpec.from_bundle_dir(folder)
    except SpecError as error:
        return {"task": folder.name, "skipped": f"the bundle cannot be read: {error}"}
    files = {"solution.py": identity_solution(spec)}
    # The reference's helper files, where it imports them (the solution sees the
    # prompt-visible ones anyway).
    files.update({path: text for path, text in spec.files.items() if path != spec.reference_path})
    report = grade(spec, files, backend=get_backend("bwrap"), limits=Limits())
    timing = report.timing
    return {
        "task": folder.name,
        "verdict": report.verdict.value,
        "reason": report.reason,
        "timing_mode": report.timing_mode,
        "speedup": report.speedup,
        "speedup_ci": list(timing.speedup_ci) if timing else None,
        "significant": bool(timing and timing.significant),
        "scored": bool(timing and timing.scored),
        "pairs": timing.witness.get("pairs") if timing else None,
        "duration_s": report.duration_s,
    }


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in results if r.get("verdict") == Verdict.ACCEPTED and r.get("scored")]
    significant = [r for r in scored if r["significant"]]
    faster = [r for r in significant if r["speedup"] > 1.0]
    speedups = [r["speedup"] for r in scored]
    return {
        "gradings": len(results),
        "scored_gradings": len(scored),
        "tasks": len({r["task"] for r in scored}),
        "declared_significant": len(significant),
        "declared_significantly_faster": len(faster),
        "significant_rate": len(significant) / len(scored) if scored else None,
        "largest_speedup": max(speedups, default=None),
        "smallest_speedup": min(speedups, default=None),
        "largest_significant_speedup": max((r["speedup"] for r in faster), default=None),
        "not_graded": [
            f"{r['task']}: {r.get('skipped') or r.get('verdict')} {r.get('reason', '')}"
            for r in results
            if r not in scored
        ],
    }


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="gradings per task")
    parser.add_argument("--tasks", default="", help="comma-separated task folder names")
    parser.add_argument("--jobs", type=int, default=1, help="gradings at a time")
    parser.add_argument("--bundles", help="grade the bundle folders under this folder instead")
    parser.add_argument("--sample", type=int, default=0, help="only this many of them")
    parser.add_argument("--results", default=str(RESULTS), help="where the JSON goes")
    args = parser.parse_args()
    get_backend("bwrap").check()
    wanted = set(filter(None, args.tasks.split(",")))
    candidates = (
        sorted(p.parent for p in Path(args.bundles).glob("*/task.toml"))
        if args.bundles
        else FOLDERS
    )
    folders = [f for f in candidates if not wanted or f.name in wanted]
    if args.sample and len(folders) > args.sample:
        step = len(folders) / args.sample
        folders = [folders[int(i * step)] for i in range(args.sample)]
    work = [folder for folder in folders for _ in range(args.runs)]
    began, load_before = time.monotonic(), os.getloadavg()
    results_path = Path(args.results).resolve()
    results_path.parent.mkdir(parents=True, exist_ok=True)
    partial = results_path.with_suffix(".partial.jsonl")
    partial.write_text("")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = []
        # Each grading is written as it ends: a long run cut short keeps what it measured.
        for result in pool.map(grade_identity, work):
            results.append(result)
            with partial.open("a") as out:
                out.write(json.dumps(result) + "\n")
            print(
                f"  {result['task']}: {result.get('verdict')} {result.get('speedup')} "
                f"significant={result.get('significant')} scored={result.get('scored')}",
                flush=True,
            )
    summary = summarise(results)
    print(f"{'task':28s} {'mode':11s} speedups (* significant)")
    for folder in folders:
        rows = [r for r in results if r["task"] == folder.name]
        if rows and "skipped" in rows[0]:
            print(f"{folder.name:28s} skipped: {rows[0]['skipped']}")
            continue
        cells = " ".join(
            f"{r['speedup']:.3f}{'*' if r['significant'] else ' '}"
            if r["speedup"] is not None
            else r["verdict"]
            for r in rows
        )
        print(f"{folder.name:28s} {rows[0]['timing_mode']!s:11s} {cells}")
    print(
        f"\n{summary['scored_gradings']} scored gradings of {summary['tasks']} tasks: "
        f"{summary['declared_significant']} declared significant "
        f"({summary['declared_significantly_faster']} faster); speedups "
        f"{_figure(summary['smallest_speedup'])}..{_figure(summary['largest_speedup'])}; "
        f"largest significant speedup {summary['largest_significant_speedup']}"
    )
    for line in summary["not_graded"]:
        print(f"  not scored: {line}")
    results_path.write_text(
        json.dumps(
            {
                "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
                "runs_per_task": args.runs,
                "bundles": args.bundles,
                "jobs": args.jobs,
                "elapsed_s": time.monotonic() - began,
                "load_average": {"before": load_before, "after": os.getloadavg()},
                "summary": summary,
                "gradings": results,
            },
            indent=2,
        )
    )
    print(f"wrote {results_path}")


if __name__ == "__main__":
    main()
