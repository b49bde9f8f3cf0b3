"""Rules of kernel grading that need no sandbox: which file is the entry, what
a submission may look like, what needs a GPU, and which verdict an error or a
limit hit earns. Also the record of a pair of batches.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from sandboxes.base import MiB, RunResult

from .batch import Batch
from .compare import Comparison
from .inputs import Placed
from .report import Verdict

MAX_SUBMISSION_FILES = 64
MAX_SUBMISSION_BYTES = 4 * MiB

# CUDA the solution builds or imports: a .cu file it submits, cuda_sources= for
# load_inline, CUDAExtension, CuPy, PyCUDA, Numba's CUDA target. A quoted ".cu"
# name alone is not enough (a comment or an unused string would do).
_CUDA_SOURCE = re.compile(
    r"cuda_sources\s*=|CUDAExtension|^\s*(import|from)\s+(cupy|pycuda)\b|numba\s*\.\s*cuda",
    re.MULTILINE,
)
_TRITON = re.compile(r"^\s*(import|from)\s+triton\b", re.MULTILINE)
NEEDS_CUDA_ERRORS = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "no CUDA GPUs are available",
)
_COMPILE_ERRORS = ("Error building extension", "CompilationError", "CalledProcessError")
_MEMORY_ERRORS = ("can't allocate memory", "out of memory", "OutOfMemoryError", "std::bad_alloc")


class Stop(Exception):
    """Ends the grading with a verdict."""

    def __init__(self, verdict: Verdict, reason: str, notes: str = "") -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason
        self.notes = notes


# -- static checks -------------------------------------------------------------------


def choose_entry(files: Mapping[str, str]) -> str:
    """``solution.py``, or the only ``.py`` file."""
    if "solution.py" in files:
        return "solution.py"
    python = [name for name in files if name.endswith(".py")]
    if len(python) == 1:
        return python[0]
    raise Stop(
        Verdict.RUNTIME_ERROR,
        f"no solution.py among the submitted files ({', '.join(sorted(files)) or 'none'})",
    )


def check_submission_files(files: Mapping[str, str], task_files: Collection[str] = ()) -> None:
    """Refuse, as the submission's error, files that could not be laid out in the work
    dir: bad or over-long names, a file that is also a folder, a name the task's own
    files (``task_files``) take."""
    if len(files) > MAX_SUBMISSION_FILES:
        raise Stop(
            Verdict.RUNTIME_ERROR, f"too many files ({len(files)}; at most {MAX_SUBMISSION_FILES})"
        )
    total = 0
    folders = {str(parent) for name in files for parent in PurePosixPath(name).parents}
    task_folders = {str(parent) for name in task_files for parent in PurePosixPath(name).parents}
    for name, text in files.items():
        path = PurePosixPath(name)
        if not name or path.is_absolute() or ".." in path.parts or name.startswith("."):
            raise Stop(Verdict.RUNTIME_ERROR, f"invalid file name {name!r}")
        if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in path.parts):
            raise Stop(Verdict.RUNTIME_ERROR, f"file name {name[:80]!r} has a part over 255 bytes")
        if len(name.encode("utf-8", "surrogatepass")) > 1024 or len(path.parts) > 32:
            raise Stop(Verdict.RUNTIME_ERROR, f"file path {name[:80]!r} is too long or too deep")
        if name in folders:
            raise Stop(Verdict.RUNTIME_ERROR, f"{name!r} is both a file and a folder")
        clash = name in task_folders or any(str(parent) in task_files for parent in path.parents)
        if clash:
            raise Stop(Verdict.RUNTIME_ERROR, f"{name!r} collides with one of the task's files")
        total += len(text.encode("utf-8", "surrogatepass"))
    if total > MAX_SUBMISSION_BYTES:
        raise Stop(
            Verdict.RUNTIME_ERROR,
            f"the submission is {total} bytes; at most {MAX_SUBMISSION_BYTES}",
        )


def uses_cuda_source(files: Mapping[str, str]) -> bool:
    return any(
        name.endswith((".cu", ".cuh")) or _CUDA_SOURCE.search(text) for name, text in files.items()
    )


def uses_triton(files: Mapping[str, str]) -> bool:
    return any(name.endswith(".py") and _TRITON.search(text) for name, text in files.items())


def classify_error(error: Mapping[str, str], *, gpu_missing: bool = True) -> tuple[Verdict, str]:
    """The verdict for an exception the submission's code raised, and a reason.
    ``gpu_missing``: the task targets a GPU this host lacks, so an error saying CUDA
    is unavailable means the solution needs one (``needs_hardware``)."""
    kind, message, where = error.get("type", ""), error.get("message", ""), error.get("where", "")
    text = f"{kind}: {message}"
    place = {
        "import": "importing the solution",
        "entry": "the solution",
        "setup": "building the model",
        "call": "a call",
    }.get(where, where)
    if where == "entry":
        return Verdict.RUNTIME_ERROR, f"the solution {message}"
    if kind in ("SyntaxError", "IndentationError", "TabError"):
        return Verdict.COMPILE_ERROR, f"the solution does not compile: {text}"
    if any(marker in text for marker in _COMPILE_ERRORS):
        return Verdict.COMPILE_ERROR, f"building the extension failed: {text}"
    if kind == "MemoryError" or any(marker in text for marker in _MEMORY_ERRORS):
        return Verdict.MEMORY_LIMIT_EXCEEDED, f"out of memory in {place}: {text}"
    if gpu_missing and any(marker in text for marker in NEEDS_CUDA_ERRORS):
        return Verdict.NEEDS_HARDWARE, f"the solution needs a CUDA device: {text}"
    if kind == "SystemExit":
        return (
            Verdict.RUNTIME_ERROR,
            f"the solution called exit during {place} ({message or 'no code'})",
        )
    return Verdict.RUNTIME_ERROR, f"{place} raised {text}"


def limit_verdict(result: RunResult) -> tuple[Verdict, str] | None:
    limit = result.limit_exceeded
    if limit in ("wall_time", "cpu_time"):
        return (
            Verdict.TIME_LIMIT_EXCEEDED,
            f"the submission process exceeded its {limit.replace('_', ' ')} limit",
        )
    if limit == "memory":
        return Verdict.MEMORY_LIMIT_EXCEEDED, "the submission process exceeded its memory limit"
    if limit in ("output", "file_size"):
        return (
            Verdict.OUTPUT_LIMIT_EXCEEDED,
            f"the submission exceeded its {limit.replace('_', ' ')} limit",
        )
    if limit == "processes":
        return Verdict.RUNTIME_ERROR, "the submission exceeded its process limit"
    if result.stdout_truncated or result.stderr_truncated:
        return (
            Verdict.OUTPUT_LIMIT_EXCEEDED,
            "the submission wrote more output than the limit allows",
        )
    return None


# -- a pair of batches -----------------------------------------------------------------


@dataclass
class Pair:
    """The same inputs run by both sides: one batch each, back to back."""

    seeds: list[int]
    inputs: list[Any]  # packed trees from the reference's generate
    input_blobs: list[memoryview]
    placed: list[Placed]  # the same inputs laid out for the arenas
    ref: Batch | None = None
    sub: Batch | None = None
    comparisons: list[Comparison] = field(default_factory=list)


def list_of(value: Any, count: int, what: str) -> list[Any]:
    if not isinstance(value, list) or len(value) != count:
        raise Stop(Verdict.INTEGRITY_VIOLATION, f"the submission process sent malformed {what}")
    return value
