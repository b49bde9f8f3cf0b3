"""How fast the profiling kind's trace library reads and analyses a big trace.

    .venv/bin/python bench/profiling.py [--events 1000000] [--gzip] [--save PATH]

1. Generates a training-loop trace (``graders.profiling.generate``, every
   bottleneck planted) of at least ``--events`` events and writes it to a
   temporary file, as ``torch.profiler`` would (``--gzip``: compressed).
2. In a fresh process, so that the generator's memory does not count: reads
   the file, loads it (``load_trace``), runs every analysis once, and reports
   each one's time, the events per second over load and analyses, and the
   process's peak resident memory.

Prints a table and, last, one line:
``profiling: N events, load X s, analyses Y s, peak Z MiB``. The budget is
10 s and 1 GiB for a million events on the 2-core development machine. The
host's load average is printed too: on a shared machine the times move with it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.profiling import analysis  # noqa: E402
from graders.profiling.generate import GeneratorConfig, generate, write_trace  # noqa: E402

BENCH_CONFIG = {
    "layers": 8,
    "tiny_kernels": 150,
    "host_syncs": 2,
    "pageable_copies": 1,
    "allreduce_us": 300.0,
    "dataloader_stall_us": 200.0,
    "second_gemm": True,
    "pinned_copy": True,
}


def build_trace(events: int, folder: Path, *, gzip: bool) -> tuple[Path, int, float]:
    """A trace of at least ``events`` events: one and two steps are generated to
    learn how many events a step adds, then enough steps. Returns the file, its
    event count and the generation time."""
    one, two = (
        len(
            generate(GeneratorConfig.from_mapping({"steps": n, **BENCH_CONFIG}), seed=1).traces[0][
                "traceEvents"
            ]
        )
        for n in (1, 2)
    )
    steps = 1 + max(0, math.ceil((events - one) / (two - one)))
    started = time.perf_counter()
    task = generate(GeneratorConfig.from_mapping({"steps": steps, **BENCH_CONFIG}), seed=1)
    path = write_trace(
        task.traces[0], folder / ("rank0.json.gz" if gzip else "rank0.json"), gzip=gzip
    )
    return path, len(task.traces[0]["traceEvents"]), time.perf_counter() - started


def measure(path: Path) -> dict[str, Any]:
    """Load the trace and run each analysis once; times in seconds."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    trace = analysis.load_trace(path.read_bytes(), name=path.name)
    timings["load"] = time.perf_counter() - started
    steps = [step.number for step in trace.steps]
    runs = {
        "temporal_breakdown": lambda: analysis.temporal_breakdown(trace),
        "idle_time_by_cause": lambda: analysis.idle_time_by_cause(trace),
        "launch_delays": lambda: analysis.launch_delays(trace),
        "comm_comp_overlap": lambda: analysis.comm_comp_overlap(trace),
        "kernel_table": lambda: analysis.kernel_table(trace),
        "host_syncs": lambda: analysis.host_syncs(trace),
        "memcpy_summary": lambda: analysis.memcpy_summary(trace),
        "dataloader_stalls": lambda: analysis.dataloader_stalls(trace),
        "stragglers": lambda: analysis.stragglers([trace]),
        "temporal_breakdown (hta)": lambda: analysis.temporal_breakdown(trace, conventions="hta"),
        "kernel_table (steps 2-3)": lambda: analysis.kernel_table(trace, steps=steps[1:3]),
    }
    for label, run in runs.items():
        started = time.perf_counter()
        run()
        timings[label] = time.perf_counter() - started
    return {
        "events": trace.event_count,
        "rows": len(trace),
        "timings": timings,
        "peak_mib": peak_memory_mib(),
    }


def peak_memory_mib() -> float:
    """This process's peak resident memory. Linux keeps ``ru_maxrss`` across
    fork and exec, so a child of a big parent would report the parent's; the
    ``VmHWM`` line of /proc/self/status belongs to this process alone."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument(
        "--gzip", action="store_true", help="write and read the trace gzip-compressed"
    )
    parser.add_argument("--save", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    with tempfile.TemporaryDirectory() as folder:
        path, events, generation = build_trace(args.events, Path(folder), gzip=args.gzip)
        size = path.stat().st_size
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
    figures = json.loads(child.stdout)
    report(figures, events=events, size=size, generation=generation)
    if args.save:
        figures.update(file_bytes=size, generation_s=generation, load_average=os.getloadavg())
        args.save.write_text(json.dumps(figures, indent=2) + "\n")


def report(figures: dict[str, Any], *, events: int, size: int, generation: float) -> None:
    timings = figures["timings"]
    analyses = sum(value for key, value in timings.items() if key != "load")
    total = timings["load"] + analyses
    print(
        f"trace: {events:,} events ({figures['rows']:,} complete), {size / 2**20:.1f} MiB on disk"
    )
    print(f"generated in {generation:.1f} s; load average {os.getloadavg()[0]:.2f}")
    print(f"{'step':<28}{'seconds':>9}")
    for label, seconds in timings.items():
        print(f"{label:<28}{seconds:>9.3f}")
    print(f"{'total':<28}{total:>9.3f}")
    print(f"events/s over load and analyses: {events / total:,.0f}")
    print(
        f"profiling: {events} events, load {timings['load']:.2f} s, "
        f"analyses {analyses:.2f} s, peak {figures['peak_mib']:.0f} MiB"
    )


if __name__ == "__main__":
    main()
