"""``manage.py record_reports``: grade catalog submissions for real and keep the reports.

Pages, API responses, exports and CLI output are tested with reports the real
grader produced, never hand-written ones: a hand-written report has the keys its
author expected, a real one has the keys the grader writes. This command grades
a fixed set of submissions with the real sandbox (the catalog's own solutions,
its negatives, a copy of the reference, an empty file, code that does not
compile) and writes one JSON file per grading under ``tests/fixtures/reports/``:
the task's slug, the submitted files and the report exactly as a worker stores it.
Run it again whenever the report format changes; ``tests/recorded.py`` loads them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

CATALOG = Path(settings.BASE_DIR) / "reference_solutions"
DEFAULT_OUT = Path(settings.BASE_DIR) / "tests" / "fixtures" / "reports"


@dataclass(frozen=True)
class Case:
    """One recorded grading: ``name`` is the fixture's file name (without ``.json``)."""

    name: str
    task: str
    source: str  # a path in the task's folder, or "@reference", "@empty", "@syntax", "@cuda"
    reference_tail: str = ""  # appended to the task's reference (a task with a slip in it)


CASES = (
    # The CPU tasks' solutions (C++ built in the sandbox) and their negatives.
    Case("causal-softmax-solution", "cpu-causal-softmax", "solution.py"),
    Case("causal-softmax-in-place", "cpu-causal-softmax", "bad/in_place.py"),
    Case("causal-softmax-no-tail", "cpu-causal-softmax", "bad/no_tail.py"),
    Case("causal-softmax-reference-copy", "cpu-causal-softmax", "@reference"),
    Case("causal-softmax-empty", "cpu-causal-softmax", "@empty"),
    Case("causal-softmax-syntax-error", "cpu-causal-softmax", "@syntax"),
    Case("masked-mean-pool-solution", "cpu-masked-mean-pool", "solution.py"),
    Case("masked-mean-pool-empty-sequence", "cpu-masked-mean-pool", "bad/empty_sequence.py"),
    Case("masked-mean-pool-stale", "cpu-masked-mean-pool", "bad/stale_after_warmup.py"),
    Case("add-layernorm-solution", "cpu-add-layernorm", "solution.py"),
    Case("add-layernorm-one-pass-variance", "cpu-add-layernorm", "bad/one_pass_variance.py"),
    # A GPU task graded on a CPU host: Triton's interpreter, timed but never scored.
    Case("row-softmax-solution", "row-softmax", "solution.py"),
    Case("row-softmax-no-max-subtraction", "row-softmax", "bad/no_max_subtraction.py"),
    Case("row-softmax-patched-clock", "row-softmax", "bad/patched_clock.py"),
    # A CUDA kernel for a GPU task, on a host without a GPU: needs_hardware.
    Case("row-softmax-cuda-source", "row-softmax", "@cuda"),
    # A serving task (a rate search with real vLLM engines): the expert's config, a
    # context too short for the prompts (every request fails), a flag not allowed.
    Case("shared-prefix-solution", "serve-shared-prefix", "solution/engine.toml"),
    Case("shared-prefix-short-context", "serve-shared-prefix", "bad/short-context.toml"),
    Case("shared-prefix-block-size", "serve-shared-prefix", "bad/block-size.toml"),
    # A task whose reference raises on its own inputs: task_error, not the submission's.
    Case(
        "causal-softmax-broken-reference",
        "cpu-causal-softmax",
        "solution.py",
        reference_tail=(
            "\n\ndef get_inputs():  # a slip: the row count computed as zero\n"
            "    rows = 0\n"
            "    return [torch.randn(rows, 64) / (rows // rows)]\n"
        ),
    ),
)

CUDA_SOLUTION = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = """
__global__ void softmax_rows(const float* x, float* y, int cols) {
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    float top = -INFINITY, total = 0.f;
    for (int j = 0; j < cols; ++j) top = fmaxf(top, row[j]);
    for (int j = 0; j < cols; ++j) total += expf(row[j] - top);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = expf(row[j] - top) / total;
}

torch::Tensor softmax(torch::Tensor x) {
    auto y = torch::empty_like(x);
    softmax_rows<<<x.size(0), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
"""

ext = load_inline(
    "row_softmax_cuda",
    cpp_sources="torch::Tensor softmax(torch::Tensor x);",
    cuda_sources=CUDA_SRC,
    functions=["softmax"],
)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.softmax(x.contiguous())
'''


def submission_files(task_dir: Path, source: str, name: str = "solution.py") -> dict[str, str]:
    """The files a user would submit for ``source``, as ``{name: text}``: a kernel's
    ``solution.py``, a serving task's ``engine.toml``."""
    if source == "@empty":
        return {"solution.py": ""}
    if source == "@syntax":
        return {"solution.py": "import torch\n\nclass ModelNew(torch.nn.Module)\n    pass\n"}
    if source == "@cuda":
        return {"solution.py": CUDA_SOLUTION}
    if source == "@reference":
        # What a user does to get a baseline: the reference, its class renamed.
        reference = (task_dir / "reference.py").read_text(encoding="utf-8")
        return {"solution.py": re.sub(r"\bclass Model\b", "class ModelNew", reference)}
    return {name: (task_dir / source).read_text(encoding="utf-8")}


def record(case: Case) -> dict[str, Any]:
    """Grade one case the way a worker would, through the grading entry point."""
    from graders.files import read_bundle
    from graders.worker import grade_message

    task_dir = CATALOG / case.task
    manifest, task_files = read_bundle(task_dir)
    if case.reference_tail:
        reference = next(f["path"] for f in manifest["files"] if f.get("role") == "reference")
        task_files[reference] += case.reference_tail
    name = manifest.get("grading", {}).get("submission", "solution.py")
    files = submission_files(
        task_dir, case.source, name if manifest["kind"] == "serving" else "solution.py"
    )
    message = {"manifest": manifest, "task_files": task_files, "submission_files": files}
    report = grade_message(message, backend_name="bwrap")
    return {"task": manifest.get("slug"), "source": case.source, "files": files, "report": report}


class Command(BaseCommand):
    help = "Grade catalog submissions in the real sandbox and write their reports as fixtures."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", default=str(DEFAULT_OUT), help="folder for the JSON files")
        parser.add_argument("names", nargs="*", help="record only these cases (default: all)")

    def handle(self, *args: Any, **options: Any) -> None:
        wanted = set(options["names"])
        unknown = wanted - {case.name for case in CASES}
        if unknown:
            raise CommandError(f"no such case: {', '.join(sorted(unknown))}")
        out = Path(options["out"])
        out.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            if wanted and case.name not in wanted:
                continue
            recorded = record(case)
            path = out / f"{case.name}.json"
            path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            report = recorded["report"]
            self.stdout.write(f"{case.name}: {report['verdict']} ({report['reason'][:80]})")
