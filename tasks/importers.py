"""Turn problems in the two public formats into task bundles.

KernelBench problems are single files (``Model``, ``get_inputs``,
``get_init_inputs``, sizes in module-level globals). GPU MODE problems are
folders with ``reference.py`` (``ref_kernel``, ``generate_input``,
``check_implementation``) and ``task.yml`` (``tests`` and ``benchmarks``: lists
of keyword arguments for ``generate_input``).

Their shapes are sized for GPUs (a KernelBench softmax is 4096 x 393216 fp32,
about 6 GiB), so each imported bundle keeps the original shapes for GPU hosts
and adds a scaled-down set for CPU hosts, where Triton runs under the
interpreter and only correctness is decided.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
import yaml

from graders.verdicts import Verdict

# The product of a scaled-down CPU shape set's sizes stays within this, so a grading
# (the Triton interpreter included) takes seconds.
CPU_ELEMENT_BUDGET = 32768
# Globals below this are parameters (kernel sizes, strides, dims), not sizes.
SIZE_THRESHOLD = 16

DEFAULT_TOLERANCES = {
    "float32": {"atol": 1e-4, "rtol": 1e-4},
    "float16": {"atol": 1e-2, "rtol": 1e-2},
    "bfloat16": {"atol": 2e-2, "rtol": 2e-2},
}

HUMAN_CRITERIA = [
    (
        "clarity",
        "Clarity",
        "The kernel is easy to follow: named block sizes, clear indexing, comments on the "
        "tricky parts.",
        ["Hard to follow.", "Readable with effort.", "Clear at a glance."],
    ),
    (
        "numerical-care",
        "Numerical care",
        "Accumulates in a wide enough type, handles large magnitudes, ragged tails and "
        "empty inputs.",
        ["Ignores numerical issues.", "Handles the common cases.", "Robust on every edge case."],
    ),
    (
        "explanation",
        "Explanation",
        "Explains the design choices and why the kernel should be fast on the target.",
        ["No explanation.", "Some explanation.", "A clear account of the design and its costs."],
    ),
]


class ProblemFormatError(ValueError):
    """A problem file cannot be turned into a bundle; the message names the file."""


@dataclass
class ImportedBundle:
    slug: str
    files: dict[str, str]  # path -> text, task.toml included
    notes: list[str] = field(default_factory=list)
    # How many times smaller than the original the CPU shape sets' sizes are (1 when
    # they are the originals, or there are none): above 1, a milder shrink exists.
    shrink: int = 1

    def write(self, root: Path) -> Path:
        folder = root / self.slug
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in self.files.items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return folder


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "problem"


def shrink_factor(sizes: dict[str, int], budget: int = CPU_ELEMENT_BUDGET) -> int:
    """The smallest power of two that, dividing every size-like integer, brings their
    product within ``budget`` (1 when it already is)."""
    big = [value for value in sizes.values() if value >= SIZE_THRESHOLD]
    factor = 1
    while math.prod(max(1, value // factor) for value in big) > budget:
        factor *= 2
    return factor


def scale_sizes(
    sizes: dict[str, int], budget: int = CPU_ELEMENT_BUDGET, relax: int = 0
) -> dict[str, int]:
    """Shrink size-like integers by one common factor, a power of two, until their
    product is within ``budget``; ``relax`` halves the factor that many times (a
    milder shrink, for a reference that fails when shrunk that far).

    One factor for every size keeps the relations a module may rely on without
    stating them (an output width that must equal a channel count, a size twice
    another); capping each size separately broke such problems.
    """
    factor = shrink_factor(sizes, budget) >> relax
    if factor <= 1:
        return {}
    return {
        name: max(1, value // factor) for name, value in sizes.items() if value >= SIZE_THRESHOLD
    }


def _module_size_globals(source: str, filename: str) -> dict[str, int | tuple[int, ...]]:
    """Module-level names bound to int constants (``n = 4``, ``M = 256 * 8``,
    ``height = width = 128``, ``D, H, W = 16, 32, 32``) or to tuples or lists of them
    (``input_shape = (8192,)``, ``hidden_layer_sizes = [32768, 32768]``)."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as error:
        raise ProblemFormatError(f"{filename}: not valid Python: {error}") from error
    found: dict[str, int | tuple[int, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value  # `height = width = 128` sets both
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            found.update(_bindings(target, value))
    return found


def _bindings(target: ast.expr, value: ast.expr) -> dict[str, int | tuple[int, ...]]:
    """Names one assignment target binds to constant sizes."""
    if isinstance(target, ast.Name):
        number = _constant_int(value)
        if number is not None:
            return {target.id: number}
        if isinstance(value, ast.Tuple | ast.List):  # the harness keeps a list a list
            items = [_constant_int(item) for item in value.elts]
            if items and all(item is not None for item in items):
                return {target.id: tuple(item for item in items if item is not None)}
        return {}
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
    ):
        found: dict[str, int | tuple[int, ...]] = {}
        for item, item_value in zip(target.elts, value.elts, strict=True):
            found.update(_bindings(item, item_value))
        return found
    return {}


_INT_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b if b else None,
    ast.Pow: lambda a, b: a**b if 0 <= b <= 64 else None,
    ast.LShift: lambda a, b: a << b if 0 <= b <= 64 else None,
}


def _constant_int(node: ast.expr) -> int | None:
    """The value of an int constant or of arithmetic on int constants, else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPERATORS:
        left, right = _constant_int(node.left), _constant_int(node.right)
        if left is None or right is None:
            return None
        return _INT_OPERATORS[type(node.op)](left, right)
    return None


def _flat_sizes(sizes: dict[str, int | tuple[int, ...]]) -> dict[str, int]:
    flat: dict[str, int] = {}
    for name, value in sizes.items():
        if isinstance(value, tuple):
            flat.update({f"{name}[{index}]": item for index, item in enumerate(value)})
        else:
            flat[name] = value
    return flat


def scale_module_sizes(sizes: dict[str, int | tuple[int, ...]], relax: int = 0) -> dict[str, Any]:
    """The CPU shape set's overrides for a module's size globals: ints and the elements
    of int tuples and lists shrink by one common factor (``scale_sizes``); either comes
    back as a list, which the harness gives back in the type the module wrote."""
    scaled = scale_sizes(_flat_sizes(sizes), relax=relax)
    overrides: dict[str, Any] = {}
    for name, value in sizes.items():
        if isinstance(value, tuple):
            items = [scaled.get(f"{name}[{index}]", item) for index, item in enumerate(value)]
            if items != list(value):
                overrides[name] = items
        elif name in scaled:
            overrides[name] = scaled[name]
    return overrides


# What in a reference means it cannot run on a CPU at any size: dtypes the CPU lacks
# kernels for, CUDA-only operators and APIs, CUDA source.
CUDA_ONLY_MARKERS = (
    (r"\btorch\.float8_\w+", "float8 dtypes have no CPU kernels"),
    (r"\b_scaled_mm\b", "torch._scaled_mm is CUDA-only"),
    (r"\btorch\.cuda\.(?:Stream|Event|graph|CUDAGraph)\b", "uses CUDA streams, events or graphs"),
    (r"\bcuda_sources\s*=", "builds CUDA source"),
    (r"^\s*(?:import|from)\s+(?:cupy|pycuda|flash_attn)\b", "imports a CUDA-only library"),
)


def cuda_only_reason(source: str) -> str:
    """Why a reference cannot run on a CPU host at any size, or "" if it may."""
    for pattern, reason in CUDA_ONLY_MARKERS:
        if re.search(pattern, source, re.MULTILINE):
            return reason
    return ""


def _module_defines(source: str, filename: str) -> set[str]:
    tree = ast.parse(source, filename=filename)
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
    }


def _default_rubric() -> dict[str, Any]:
    criteria: list[dict[str, Any]] = [
        {
            "id": "correct",
            "title": "Correct on every shape",
            "description": "The grader accepts the solution.",
            "points": 6,
            "kind": "automatic",
            "rule": {"type": "verdict", "equals": Verdict.ACCEPTED.value},
        },
        {
            "id": "speedup-1.2x",
            "title": "At least 1.2x faster than the reference on target hardware",
            "points": 2,
            "kind": "automatic",
            "rule": {"type": "speedup", "at_least": 1.2},
        },
        {
            "id": "speedup-2x",
            "title": "At least 2x faster than the reference on target hardware",
            "points": 2,
            "kind": "automatic",
            "rule": {"type": "speedup", "at_least": 2.0},
        },
        {
            "id": "integrity",
            "title": "Integrity finding",
            "description": "The grader found the solution tampering with the harness.",
            "points": -4,
            "kind": "automatic",
            "rule": {"type": "integrity", "clean": False},
        },
    ]
    for key, title, description, descriptors in HUMAN_CRITERIA:
        criteria.append(
            {
                "id": key,
                "title": title,
                "description": description,
                "points": len(descriptors) - 1,
                "kind": "human",
                "levels": [
                    {"score": score, "descriptor": text} for score, text in enumerate(descriptors)
                ],
            }
        )
    return {"criteria": criteria}


def _manifest(
    *,
    slug: str,
    title: str,
    tags: list[str],
    hardware: str,
    language: str,
    fmt: str,
    shapes: list[dict[str, Any]],
    difficulty: str,
    helpers: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "slug": slug,
        "title": title,
        "kind": "kernel",
        "difficulty": difficulty,
        "tags": tags,
        "hardware": hardware,
        "statement": "statement.md",
        "grading": {
            "format": fmt,
            "language": language,
            "trials": 5,
            "shapes": shapes,
            "tolerances": DEFAULT_TOLERANCES,
            "timing": {"warmup": 3, "min_batches": 5, "max_batches": 30, "budget_s": 20.0},
        },
        "files": [
            {"path": "statement.md", "visibility": "prompt", "role": "statement"},
            # Both public formats show the reference to the solver: it is the problem.
            {"path": "reference.py", "visibility": "prompt", "role": "reference"},
            # Modules the reference imports (a GPU MODE problem's task.py, the suite's
            # utils.py): beside the reference and the solution alike.
            *({"path": path, "visibility": "prompt", "role": "other"} for path in helpers),
        ],
        "rubric": _default_rubric(),
    }


def _shape_table(values: dict[str, Any]) -> str:
    if not values:
        return "(no size parameters)"
    return ", ".join(f"`{name} = {value}`" for name, value in values.items())


def _tolerance_lines() -> str:
    return "\n".join(
        f"- `{dtype}`: atol {tol['atol']:g}, rtol {tol['rtol']:g}"
        for dtype, tol in DEFAULT_TOLERANCES.items()
    )


KERNELBENCH_STATEMENT = """# {title}

Write a faster implementation of the PyTorch model in `reference.py`, shown
below. Define `class ModelNew(nn.Module)` taking the same constructor
arguments as `Model` (from `get_init_inputs()`) and computing the same
outputs as `Model.forward` from the inputs of `get_inputs()`. Parameters of
the same name and shape are copied from the reference model into yours, so
both compute with the same weights.

Target hardware: **{hardware}**. Write the kernel in {language}.

## Shapes

- On GPU hosts, the original sizes: {gpu_shapes}.
- On CPU hosts, where Triton runs under its interpreter and only correctness is
  checked: {cpu_shapes}.

## Correct means

Every output has the reference's dtype, shape and device, and
`|out - ref| <= atol + rtol * |ref|` element-wise, over at least 5 trials of
fresh random inputs, with tolerances by dtype:

{tolerances}

## Reference

```python
{source}
```
"""


def import_kernelbench_file(
    path: Path,
    *,
    level: int | None,
    hardware: str = "h100",
    language: str = "triton",
    relax: int = 0,
    gpu_only: str = "",
) -> ImportedBundle:
    """One KernelBench problem file (e.g. ``level1/23_Softmax.py``) as a bundle.

    ``relax`` asks for a milder CPU shrink (see ``scale_sizes``); ``gpu_only`` gives
    a reason the problem has no CPU shape set beyond those found in its source (its
    reference failed at every CPU size tried: ``tasks.suite_report.fit_problem``)."""
    source = path.read_text(encoding="utf-8")
    defined = _module_defines(source, path.name)
    missing = {"Model", "get_inputs", "get_init_inputs"} - defined
    if missing:
        raise ProblemFormatError(
            f"{path}: not a KernelBench problem: missing {', '.join(sorted(missing))}"
        )
    notes = []
    if ".cuda()" in source:
        # Device placement is the harness's job; a hard-coded .cuda() fails on CPU hosts.
        source = source.replace(".cuda()", "")
        notes.append("removed .cuda() calls: the harness places inputs on the device")
    match = re.match(r"(\d+)_(.+)", path.stem)
    number, name = (match.group(1), match.group(2)) if match else ("", path.stem)
    title = name.replace("_", " ")
    slug = slugify(f"kb-l{level}-{number}-{name}" if level is not None else f"kb-{name}")
    sizes = _module_size_globals(source, path.name)
    cpu = scale_module_sizes(sizes, relax=relax)
    shapes: list[dict[str, Any]] = [{"name": "original", "hosts": ["gpu"]}]
    gpu_only = cuda_only_reason(source) or gpu_only
    shrink = 1 if gpu_only else max(1, shrink_factor(_flat_sizes(sizes)) >> relax)
    if gpu_only:
        notes.append(f"GPU-only: {gpu_only}")
    elif cpu:
        shapes.append({"name": "cpu-scaled", "hosts": ["cpu"], **cpu})
    else:
        shapes[0] = {"name": "original"}  # small enough for every host
    tags = ["kernelbench"] + ([f"level{level}"] if level is not None else [])
    manifest = _manifest(
        slug=slug,
        title=title,
        tags=tags,
        hardware=hardware,
        language=language,
        fmt="kernelbench",
        shapes=shapes,
        difficulty={1: "easy", 2: "medium"}.get(level or 0, "hard"),
    )
    statement = KERNELBENCH_STATEMENT.format(
        title=title,
        hardware=hardware,
        language=language,
        gpu_shapes=_shape_table(sizes),
        cpu_shapes=f"none: GPU-only ({gpu_only})" if gpu_only else _shape_table({**sizes, **cpu}),
        tolerances=_tolerance_lines(),
        source=source.rstrip(),
    )
    return ImportedBundle(
        slug=slug,
        files={
            "task.toml": tomli_w.dumps(manifest),
            "statement.md": statement,
            "reference.py": source,
        },
        notes=notes,
        shrink=shrink,
    )


GPUMODE_STATEMENT = """# {title}

{description}

Implement `custom_kernel(data)` in `solution.py`: it receives what
`generate_input(**shape, seed=...)` in `reference.py` returns and must produce
what `ref_kernel(data)` produces; `check_implementation` in the reference
decides correctness, over at least 5 trials of fresh inputs.

Target hardware: **{hardware}**. Write the kernel in {language}.

## Shapes

- On GPU hosts (tests and benchmarks of the original problem): {gpu_shapes}.
- On CPU hosts, scaled down, correctness only: {cpu_shapes}.

## Reference

```python
{source}
```
"""


def _case_sizes(case: dict[str, Any]) -> dict[str, int]:
    return {key: value for key, value in case.items() if type(value) is int and key != "seed"}


def _scale_case(case: dict[str, Any], relax: int = 0) -> dict[str, Any]:
    return {**case, **scale_sizes(_case_sizes(case), relax=relax)}


def import_gpumode_folder(
    folder: Path,
    *,
    hardware: str = "h100",
    language: str = "triton",
    relax: int = 0,
    gpu_only: str = "",
) -> ImportedBundle:
    """One GPU MODE problem folder (``reference.py`` + ``task.yml``) as a bundle;
    ``relax`` and ``gpu_only`` as for ``import_kernelbench_file``."""
    reference = folder / "reference.py"
    task_yml = folder / "task.yml"
    for required in (reference, task_yml):
        if not required.is_file():
            raise ProblemFormatError(
                f"{folder}: not a GPU MODE problem: {required.name} is missing"
            )
    source = reference.read_text(encoding="utf-8")
    defined = _module_defines(source, "reference.py")
    missing = {"ref_kernel", "generate_input"} - defined
    if missing:
        raise ProblemFormatError(f"{reference}: missing {', '.join(sorted(missing))}")
    try:
        meta = yaml.safe_load(task_yml.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise ProblemFormatError(f"{task_yml}: not valid YAML: {error}") from error
    if not isinstance(meta, dict):
        raise ProblemFormatError(f"{task_yml}: expected a mapping at the top level")
    helpers = _gpumode_helpers(folder, meta, task_yml)
    source, mapped = map_cuda_device(source)
    notes = (
        ["device 'cuda' in reference.py is now the host's device (CPU shape sets run on CPUs)"]
        if mapped
        else []
    )
    tests = _cases(meta, "tests", task_yml)
    benchmarks = _cases(meta, "benchmarks", task_yml, required=False)
    shapes: list[dict[str, Any]] = []
    for index, case in enumerate(tests + benchmarks):
        clean = {key: value for key, value in case.items() if key != "seed"}
        shapes.append({"name": f"gpu-{index + 1}", "hosts": ["gpu"], **clean})
    gpu_only = cuda_only_reason(source) or gpu_only
    if gpu_only:
        notes.append(f"GPU-only: {gpu_only}")
    shrink = max([1] + [shrink_factor(_case_sizes(case)) >> relax for case in tests])
    for index, case in enumerate([] if gpu_only else tests):
        clean = {key: value for key, value in _scale_case(case, relax).items() if key != "seed"}
        shapes.append({"name": f"cpu-{index + 1}", "hosts": ["cpu"], **clean})
    name = folder.name.removesuffix("_py")
    slug = slugify(f"gpumode-{name}")
    title = str(meta.get("name") or name.replace("_", " ").title())
    manifest = _manifest(
        slug=slug,
        title=title,
        tags=["gpumode"],
        hardware=hardware,
        language=language,
        fmt="gpumode",
        shapes=shapes,
        difficulty="medium",
        helpers=tuple(helpers),
    )
    statement = GPUMODE_STATEMENT.format(
        title=title,
        description=str(meta.get("description") or "").strip(),
        hardware=hardware,
        language=language,
        gpu_shapes="; ".join(_shape_table(s) for s in tests + benchmarks),
        cpu_shapes=(
            f"none: GPU-only ({gpu_only})"
            if gpu_only
            else "; ".join(_shape_table(_scale_case(s, relax)) for s in tests)
        ),
        source=source.rstrip(),
    )
    return ImportedBundle(
        slug=slug,
        files={
            "task.toml": tomli_w.dumps(manifest),
            "statement.md": statement,
            "reference.py": source,
            **helpers,
        },
        notes=notes,
        shrink=1 if gpu_only else shrink,
    )


# The files a GPU MODE runner brings itself, or that the platform's harness replaces.
_GPUMODE_OWN_FILES = {"reference.py", "submission.py", "eval.py"}


def _gpumode_helpers(folder: Path, meta: dict[str, Any], task_yml: Path) -> dict[str, str]:
    """The modules a problem's reference imports, as its ``task.yml`` lists them under
    ``files`` (``task.py`` beside it, the suite's shared ``../utils.py``): name -> text.
    A listed file must lie inside the suite's folder (the problem folder's parent)."""
    listed = meta.get("files")
    if listed is None:
        task_py = folder / "task.py"
        return {"task.py": task_py.read_text(encoding="utf-8")} if task_py.is_file() else {}
    if not isinstance(listed, list):
        raise ProblemFormatError(f"{task_yml}: `files` must be a list of name/source tables")
    suite = folder.parent.resolve()
    helpers: dict[str, str] = {}
    for index, entry in enumerate(listed):
        where = f"{task_yml}: files[{index}]"
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)):
            raise ProblemFormatError(f"{where}: expected a table with a `name` and a `source`")
        name, source = entry["name"], entry.get("source")
        if name in _GPUMODE_OWN_FILES or source == "@SUBMISSION@":
            continue
        if not isinstance(source, str) or not re.fullmatch(r"[A-Za-z0-9_]+\.py", name):
            raise ProblemFormatError(
                f"{where}: `name` must be a Python file name and `source` a path"
            )
        path = (folder / source).resolve()
        if not path.is_relative_to(suite):
            raise ProblemFormatError(f"{where}.source: {source!r} lies outside the suite's folder")
        if not path.is_file():
            raise ProblemFormatError(f"{where}.source: {source!r} does not exist")
        text, _ = map_cuda_device(path.read_text(encoding="utf-8"))
        helpers[name] = text
    return helpers


_DEVICE_NAME = "_BENCHWRIGHT_DEVICE"


def map_cuda_device(source: str) -> tuple[str, bool]:
    """The source with every ``'cuda'`` string literal replaced by the host's device
    (``cuda`` where there is one, else ``cpu``), defined once at the top; and whether
    anything was replaced. Input generators that create tensors on ``'cuda'`` then run
    on CPU hosts too; on GPU hosts nothing changes."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        ast.parse(source)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return source, False
    lines = source.splitlines(keepends=True)
    hits = [
        token
        for token in tokens
        if token.type == tokenize.STRING and token.string in ("'cuda'", '"cuda"')
    ]
    if not hits:
        return source, False
    for token in reversed(hits):  # right to left, so earlier columns stay valid
        (row, start), (_, end) = token.start, token.end
        line = lines[row - 1]
        lines[row - 1] = line[:start] + _DEVICE_NAME + line[end:]
    header = (
        "import torch as _benchwright_torch\n"
        f'{_DEVICE_NAME} = "cuda" if _benchwright_torch.cuda.is_available() else "cpu"'
        "  # set on import\n"
    )
    # After any `from __future__` import, which must come first.
    split = max(
        (
            node.end_lineno or node.lineno
            for node in ast.parse(source).body
            if isinstance(node, ast.ImportFrom) and node.module == "__future__"
        ),
        default=0,
    )
    return "".join(lines[:split]) + header + "".join(lines[split:]), True


def _cases(
    meta: dict[str, Any], key: str, where: Path, *, required: bool = True
) -> list[dict[str, Any]]:
    cases = meta.get(key)
    if cases is None and not required:
        return []
    if not isinstance(cases, list) or not cases:
        raise ProblemFormatError(
            f"{where}: `{key}` must be a non-empty list of keyword-argument tables"
        )
    for index, case in enumerate(cases):
        if not isinstance(case, dict):
            raise ProblemFormatError(
                f"{where}: {key}[{index}] must be a table of keyword arguments"
            )
    return cases


def find_kernelbench_files(root: Path, level: int | None) -> list[tuple[Path, int | None]]:
    """Problem files under ``root``: a file, a ``levelN`` folder, or a tree of them."""
    if root.is_file():
        return [(root, level)]
    found = []
    for path in sorted(root.rglob("*.py")):
        match = re.search(r"level(\d+)", str(path.relative_to(root.parent)))
        file_level = int(match.group(1)) if match else level
        if level is not None and file_level != level:
            continue
        if path.name.startswith("_"):
            continue
        found.append((path, file_level))
    return found


def find_gpumode_folders(root: Path) -> list[Path]:
    if (root / "task.yml").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("task.yml"))
