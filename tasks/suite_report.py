"""What becomes of a public suite on this platform, problem by problem.

For each problem of a KernelBench or GPU MODE folder: is it imported (or why not),
does it have a CPU shape set, and what does the real grader say about its identity
solution on this host, in how long. The identity solution is what proves an import
honest: the reference itself as ``ModelNew`` (KernelBench), the suite's own example
``submission.py`` or else ``ref_kernel`` itself (GPU MODE). ``manage.py suite_report``
prints the table.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .importers import (
    ImportedBundle,
    ProblemFormatError,
    find_gpumode_folders,
    find_kernelbench_files,
    import_gpumode_folder,
    import_kernelbench_file,
)

GPUMODE_IDENTITY = "from reference import ref_kernel as custom_kernel\n"


@dataclass
class ProblemOutcome:
    problem: str  # the file or folder, relative to the suite
    slug: str = ""
    imported: bool = False
    cpu_shapes: int = 0
    verdict: str = ""  # the identity solution's, "" when not graded
    seconds: float = 0.0
    note: str = ""  # why not imported, or the grader's reason when not accepted

    @property
    def status(self) -> str:
        if not self.imported:
            return "not imported"
        if not self.cpu_shapes:
            return "GPU-only"
        return "identity accepted" if self.verdict == "accepted" else f"identity {self.verdict}"


def identity_solution(bundle: ImportedBundle, source: Path, fmt: str) -> dict[str, str]:
    """The solution that must be accepted if the import is right."""
    if fmt == "kernelbench":
        reference = bundle.files["reference.py"]
        renamed = re.sub(r"\bclass Model\b", "class ModelNew", reference)
        renamed = re.sub(r"\bsuper\(\s*Model\s*,", "super(ModelNew,", renamed)
        return {"solution.py": renamed}
    example = source / "submission.py"
    if example.is_file():
        return {"solution.py": example.read_text(encoding="utf-8")}
    return {"solution.py": GPUMODE_IDENTITY}


def problems_of(root: Path, fmt: str, level: int | None) -> list[tuple[Path, int | None]]:
    if fmt == "kernelbench":
        return find_kernelbench_files(root, level)
    return [(folder, None) for folder in find_gpumode_folders(root)]


def import_one(path: Path, fmt: str, level: int | None) -> ImportedBundle:
    if fmt == "kernelbench":
        return import_kernelbench_file(path, level=level)
    return import_gpumode_folder(path)


def grade_problem(path: Path, fmt: str, level: int | None, root: Path) -> ProblemOutcome:
    """Import one problem and grade its identity solution in the real sandbox."""
    from sandboxes import get_backend
    from sandboxes.base import Limits
    from sandboxes.kernel import grade
    from sandboxes.spec import GradingSpec, SpecError

    outcome = ProblemOutcome(problem=str(path.relative_to(root)) if path != root else path.name)
    try:
        bundle = import_one(path, fmt, level)
    except ProblemFormatError as error:
        outcome.note = str(error)
        return outcome
    outcome.slug, outcome.imported = bundle.slug, True
    with tempfile.TemporaryDirectory() as scratch:
        try:
            spec = GradingSpec.from_bundle_dir(bundle.write(Path(scratch)))
        except SpecError as error:
            outcome.imported, outcome.note = False, f"the bundle does not parse: {error}"
            return outcome
    outcome.cpu_shapes = len(spec.shapes_for("cpu"))
    if not outcome.cpu_shapes:
        return outcome
    began = time.monotonic()
    report = grade(
        spec,
        identity_solution(bundle, path, fmt),
        backend=get_backend("bwrap"),
        limits=Limits(),
    )
    outcome.seconds = time.monotonic() - began
    outcome.verdict = report.verdict.value
    if report.verdict.value != "accepted":
        first_note = (report.operator_notes or "").strip().splitlines()[:1]
        outcome.note = "; ".join([report.reason, *first_note])[:300]
    return outcome


def summary(outcomes: list[ProblemOutcome]) -> dict[str, object]:
    graded = [o for o in outcomes if o.verdict]
    times = sorted(o.seconds for o in graded)
    return {
        "problems": len(outcomes),
        "imported": sum(o.imported for o in outcomes),
        "with a CPU shape set": sum(bool(o.cpu_shapes) for o in outcomes),
        "identity accepted": sum(o.verdict == "accepted" for o in outcomes),
        "verdicts": dict(Counter(o.verdict for o in graded)),
        "internal_error": sum(o.verdict == "internal_error" for o in outcomes),
        "median s per grading": round(times[len(times) // 2], 1) if times else None,
        "longest s": round(times[-1], 1) if times else None,
    }


def markdown(outcomes: list[ProblemOutcome]) -> str:
    lines = [
        "| problem | status | CPU shape sets | seconds | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        note = o.note.replace("|", "\\|").replace("\n", " ")
        seconds = f"{o.seconds:.1f}" if o.verdict else ""
        lines.append(f"| {o.problem} | {o.status} | {o.cpu_shapes} | {seconds} | {note} |")
    return "\n".join(lines) + "\n"
