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
from typing import Any

from graders.verdicts import Verdict

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
    shrink: int = 1  # the CPU shape sets' sizes are 1/shrink of the original's

    @property
    def status(self) -> str:
        if not self.imported:
            return "not imported"
        if not self.cpu_shapes:
            return "GPU-only"
        return (
            "identity accepted" if self.verdict == Verdict.ACCEPTED else f"identity {self.verdict}"
        )


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


def import_one(
    path: Path, fmt: str, level: int | None, *, relax: int = 0, gpu_only: str = "", **options: str
) -> ImportedBundle:
    if fmt == "kernelbench":
        return import_kernelbench_file(path, level=level, relax=relax, gpu_only=gpu_only, **options)
    return import_gpumode_folder(path, relax=relax, gpu_only=gpu_only, **options)


def fit_problem(
    path: Path, fmt: str, level: int | None, root: Path, *, relax: int = 0, **options: str
) -> tuple[ImportedBundle | None, ProblemOutcome]:
    """Import one problem and grade its identity solution in the real sandbox.

    Where the reference itself fails at the CPU sizes (``task_error``: a group count
    that no longer divides a shrunk channel count, a network that needs its full
    image size), the shrink is halved and the grading tried again, up to the original
    sizes (``relax`` says where it starts: see ``scale_sizes``); a reference that fails
    at every size, that needs a GPU (``needs_hardware``),
    or that runs out of time or memory at the smallest size it runs at makes the
    problem GPU-only, with the reason. The bundle returned is the one that was graded
    (None if not imported)."""
    outcome = ProblemOutcome(problem=str(path.relative_to(root)) if path != root else path.name)
    failures: list[str] = []
    while True:
        imported = _import_checked(path, fmt, level, outcome, relax=relax, **options)
        if imported is None or not outcome.cpu_shapes:
            return imported and imported[0], outcome
        bundle, task = imported
        report, seconds = _grade_identity(task, identity_solution(bundle, path, fmt))
        verdict, reason = str(report.get("verdict")), str(report.get("reason") or "")
        first_note = str(report.get("operator_notes") or "").strip().splitlines()[:1]
        error = (first_note or [reason])[0][:300]  # the reference's own error
        reason = "; ".join([reason, *first_note])[:300]
        if verdict == Verdict.NEEDS_HARDWARE:  # no size helps
            why = f"the reference needs a GPU on this host ({error})"
        elif verdict in (Verdict.TIME_LIMIT_EXCEEDED, Verdict.MEMORY_LIMIT_EXCEEDED):
            # The reference itself, at the smallest size it runs at: no grading fits.
            why = (
                f"the reference does not fit a CPU grading at {_size_name(bundle.shrink)} "
                f"({verdict}: {error})"
            )
        elif verdict != Verdict.TASK_ERROR:
            break
        else:
            failures.append(f"at {_size_name(bundle.shrink)}: {error}")
            if bundle.shrink > 1:
                relax += 1
                continue
            why = f"the reference fails at every CPU size tried ({failures[0]})"
        imported = _import_checked(path, fmt, level, outcome, gpu_only=why[:300], **options)
        outcome.note = why[:600]
        return imported and imported[0], outcome
    outcome.seconds, outcome.verdict, outcome.shrink = seconds, verdict, bundle.shrink
    notes = [reason] if verdict != Verdict.ACCEPTED else []
    if failures:
        notes.append(
            f"graded at {_size_name(bundle.shrink)}; the reference failed " + " / ".join(failures)
        )
    outcome.note = "; ".join(notes)[:600]
    return bundle, outcome


def grade_problem(path: Path, fmt: str, level: int | None, root: Path) -> ProblemOutcome:
    return fit_problem(path, fmt, level, root)[1]


def _import_checked(
    path: Path, fmt: str, level: int | None, outcome: ProblemOutcome, **options: Any
) -> tuple[ImportedBundle, tuple[dict[str, Any], dict[str, str]]] | None:
    """The bundle and the task it is (manifest, files), with ``outcome`` saying whether
    it imports and its CPU shape sets."""
    from graders.files import TaskUnreadable, read_bundle
    from graders.kernel.spec import GradingSpec, SpecError

    try:
        bundle = import_one(path, fmt, level, **options)
    except ProblemFormatError as error:
        outcome.imported, outcome.note = False, str(error)
        return None
    outcome.slug, outcome.imported = bundle.slug, True
    with tempfile.TemporaryDirectory() as scratch:
        try:
            manifest, files = read_bundle(bundle.write(Path(scratch)))
            spec = GradingSpec.from_manifest(manifest, files)
        except (SpecError, TaskUnreadable) as error:
            outcome.imported, outcome.note = False, f"the bundle does not parse: {error}"
            return None
    outcome.cpu_shapes = len(spec.shapes_for("cpu"))
    return bundle, (manifest, files)


def _grade_identity(
    task: tuple[dict[str, Any], dict[str, str]], solution: dict[str, str]
) -> tuple[dict[str, Any], float]:
    """Grade the identity solution as a worker would (``graders.worker``)."""
    from graders.worker import grade_message

    manifest, task_files = task
    began = time.monotonic()
    message = {"manifest": manifest, "task_files": task_files, "submission_files": solution}
    report = grade_message(message, backend_name="bwrap")
    return report, time.monotonic() - began


def _size_name(shrink: int) -> str:
    return "the original sizes" if shrink == 1 else f"1/{shrink} of the sizes"


def summary(outcomes: list[ProblemOutcome]) -> dict[str, object]:
    graded = [o for o in outcomes if o.verdict]
    times = sorted(o.seconds for o in graded)
    return {
        "problems": len(outcomes),
        "imported": sum(o.imported for o in outcomes),
        "with a CPU shape set": sum(bool(o.cpu_shapes) for o in outcomes),
        "identity accepted": sum(o.verdict == Verdict.ACCEPTED for o in outcomes),
        "verdicts": dict(Counter(o.verdict for o in graded)),
        "internal_error": sum(o.verdict == Verdict.INTERNAL_ERROR for o in outcomes),
        "median s per grading": round(times[len(times) // 2], 1) if times else None,
        "longest s": round(times[-1], 1) if times else None,
    }


def markdown(outcomes: list[ProblemOutcome]) -> str:
    lines = [
        "| problem | status | CPU shape sets | CPU sizes | seconds | note |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        note = o.note.replace("|", "\\|").replace("\n", " ")
        seconds = f"{o.seconds:.1f}" if o.verdict else ""
        sizes = ("original" if o.shrink == 1 else f"1/{o.shrink}") if o.cpu_shapes else ""
        lines.append(
            f"| {o.problem} | {o.status} | {o.cpu_shapes} | {sizes} | {seconds} | {note} |"
        )
    return "\n".join(lines) + "\n"
