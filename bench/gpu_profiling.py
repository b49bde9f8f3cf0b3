"""GPU check of the profiling kind, for a host with CUDA (run by hand there; CI has
no GPU). Two parts, each printing what it measured:

1. A real trace: a small training loop on the GPU with planted ``.item()`` syncs
   and a flood of tiny element-wise kernels, profiled with torch.profiler (CPU and
   CUDA), written as Kineto JSON and read back with the platform's trace library:
   the host syncs it finds per step must be the planted ones, and the kernel table,
   temporal breakdown and launch statistics must be those of a real GPU trace.
2. A re-profile grading with CUDA activities (``ProgramSpec(cuda=True)``): the
   host-sync program of the tests against its fix, on GPU inputs. The runner runs
   unsandboxed here (no bubblewrap on the GPU host): CUDA reserves more address
   space than any RLIMIT_AS the unsandboxed backend would set, so that one limit
   is left off for this check.

    python bench/gpu_profiling.py [--out DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PLANTED_SYNCS = 3
STEPS = 4
TINY = 40
# The tests' host-sync fix returns its loss on the inputs' device; the original's
# comes back on the CPU (torch.tensor of a float): this one keeps that.
GPU_FIX = """
import torch


def step(x, weights):
    hidden = x
    losses = []
    for weight in weights:
        hidden = torch.tanh(hidden @ weight)
        losses.append(hidden.pow(2).mean())
    return {"hidden": hidden, "loss": torch.stack(losses).sum().cpu()}
"""
GPU_INPUTS = """
import torch


def make_inputs(seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(256, 1024, generator=generator, device="cuda")
    weights = [torch.randn(1024, 1024, generator=generator, device="cuda") / 32 for _ in range(4)]
    return x, weights
"""


def real_trace(out: Path) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    from graders.profiling import analysis
    from graders.profiling.trace import load_trace

    x = torch.randn(4096, 4096, device="cuda")
    w = torch.randn(4096, 4096, device="cuda")
    small = torch.randn(1024, device="cuda")
    path = out / "real_trace.json"

    def step() -> None:
        y = x @ w
        for _ in range(TINY):
            small.add_(1.0)
        for _ in range(PLANTED_SYNCS):
            float(y[0, 0].item())

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=0, warmup=1, active=STEPS),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        for _ in range(STEPS + 1):
            step()
            prof.step()
    started = time.perf_counter()
    trace = load_trace(gzip.compress(path.read_bytes()), name="real_trace.json.gz")
    loaded_s = time.perf_counter() - started
    syncs = analysis.host_syncs(trace)
    table = analysis.kernel_table(trace)
    return {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "events": trace.event_count,
        "load_s": round(loaded_s, 3),
        "steps": [s.number for s in trace.steps],
        "host_syncs_per_step": syncs.count / max(1, len(trace.steps)),
        "planted_syncs_per_step": PLANTED_SYNCS,
        "sync_names": sorted({s.name for s in syncs.syncs}),
        "idle_after_syncs_us": syncs.idle_after_us,
        "top_kernels": [(r.short_name[:60], r.count, r.share_pct) for r in table[:3]],
        "temporal": analysis.as_json(analysis.temporal_breakdown(trace)),
        "launch": analysis.as_json(analysis.launch_delays(trace)),
        "idle_by_stream": analysis.as_json(analysis.idle_time_by_cause(trace)),
    }


def reprofile_on_cuda() -> dict:
    from graders.profiling import reprofile as reprofile_module
    from graders.profiling.reprofile import ProgramSpec, reprofile
    from sandboxes.unsandboxed import Unsandboxed

    original = resource.setrlimit

    def without_address_limit(kind: int, limits: tuple[int, int]) -> None:
        if kind != resource.RLIMIT_AS:
            original(kind, limits)

    resource.setrlimit = without_address_limit  # type: ignore[assignment]
    hello = reprofile_module._Program.hello

    def hello_or_say_why(self: Any) -> None:
        """On a runner that does not start, print what it wrote before it ended."""
        try:
            hello(self)
        except Exception:
            if self.side is not None:
                ended = self.side.finish()
                print("runner stderr:", ended.stderr.decode(errors="replace")[-3000:])
            raise

    reprofile_module._Program.hello = hello_or_say_why  # type: ignore[method-assign]
    # The unsandboxed backend emulates each bind as a folder of its own, and the
    # runner's bootstrap puts their common parent on sys.path: bind the parent.
    import dataclasses
    import tempfile

    mount = Path(tempfile.mkdtemp(prefix="bw-mount-"))
    (mount / "profile_runner").symlink_to(reprofile_module.RUNNER_DIR)
    (mount / "harness").symlink_to(reprofile_module.HARNESS_DIR)
    request = reprofile_module._request

    def one_bind(*args: Any) -> Any:
        made = request(*args)
        return dataclasses.replace(made, ro_binds=[(str(mount), reprofile_module.MOUNT)])

    reprofile_module._request = one_bind  # type: ignore[assignment]
    programs = ROOT / "tests" / "graders" / "profiling" / "programs" / "host_sync"
    spec = ProgramSpec(
        module="train.py",
        entry="step",
        inputs_module="inputs.py",
        steps=3,
        warmup=1,
        signal="syncs",
        repeats=3,
        tolerances={"float32": (1e-4, 1e-4)},
        cuda=True,
    )
    results = {}
    for name in ("train.py", "gpu_fix", "tolist.py"):
        started = time.perf_counter()
        program = GPU_FIX if name == "gpu_fix" else (programs / name).read_text()
        result = reprofile(
            spec,
            {"train.py": (programs / "train.py").read_text()},
            {"train.py": program},
            {"inputs.py": GPU_INPUTS},
            Unsandboxed(allow_unsafe=True),
            seed=7,
        )
        results[name] = {
            "outcome": result.outcome,
            "signal_ratio": result.signal_ratio,
            "reference_syncs": result.reference.syncs_per_step,
            "submission_syncs": result.submission.syncs_per_step,
            "integrity": result.integrity,
            "mismatch": result.mismatch,
            "task_problem": result.task_problem,
            "errors": [result.reference.error, result.submission.error],
            "seconds": round(time.perf_counter() - started, 1),
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    figures: dict = {}
    for part, run in (
        ("real_trace", lambda: real_trace(args.out)),
        ("reprofile", reprofile_on_cuda),
    ):
        try:
            figures[part] = run()
        except Exception as error:  # report and go on to the next part
            figures[part] = {"error": f"{type(error).__name__}: {error}"}
        print(part, json.dumps(figures[part], indent=1, default=str), flush=True)
    (args.out / "gpu_profiling.json").write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
