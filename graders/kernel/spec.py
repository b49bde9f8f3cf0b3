"""What a kernel grading needs to know about its task, parsed from ``task.toml``.

``GradingSpec`` carries the ``[grading]`` settings of a bundle (see
docs/bundles.md) together with the reference source and the helper files
beside it, so it can travel in a job message (``to_dict`` / ``from_dict``)
to a sandbox host that has no database. Errors name the offending field,
e.g. ``grading.tolerances.float16.atol: must be a non-negative number``.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxes.base import InvalidLimits, Limits

FORMATS = ("kernelbench", "gpumode")
LANGUAGES = ("triton", "cuda", "cpp", "pytorch")
HOST_KINDS = ("cpu", "gpu")
RESERVED_SHAPE_KEYS = ("name", "hosts")
MIN_TRIALS = 5
MAX_TRIALS = 1000

# Output dtypes a tolerance may be given for.
DTYPE_NAMES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "complex64",
    "complex128",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)

# Roles whose files only the reference process sees; prompt-visible files
# (other than the statement) are also placed beside the submission.
REFERENCE_SIDE_ROLES = ("reference", "test", "other", "artifact")


class SpecError(ValueError):
    """The grading settings are invalid; ``field`` names where (dotted path)."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-7, 1e-7),
    "float32": Tolerance(1e-4, 1e-4),
    "float16": Tolerance(1e-2, 1e-2),
    "bfloat16": Tolerance(2e-2, 2e-2),
    "complex64": Tolerance(1e-4, 1e-4),
    "complex128": Tolerance(1e-7, 1e-7),
}
EXACT = Tolerance(0.0, 0.0)


@dataclass(frozen=True)
class ShapeSet:
    """One set of sizes: module globals (KernelBench) or keyword arguments (GPU MODE)."""

    name: str
    params: dict[str, Any]
    hosts: tuple[str, ...] | None = None  # None: every kind of host

    def applies_to(self, host_kind: str) -> bool:
        return self.hosts is None or host_kind in self.hosts


@dataclass(frozen=True)
class TimingSettings:
    warmup: int = 3
    min_batches: int = 5
    max_batches: int = 30
    target_rel_error: float = 0.02
    budget_s: float = 20.0
    call_timeout_s: float = 30.0  # one call past this is a time limit exceeded
    shape: str | None = None  # the shape set to time; default: the largest inputs


@dataclass
class GradingSpec:
    format: str
    language: str
    reference_path: str
    files: dict[str, str]  # for the reference process: the reference and its helpers
    shared_files: dict[str, str] = field(default_factory=dict)  # prompt files beside a solution
    trials: int = MIN_TRIALS
    seed_inputs: bool = True
    shapes: list[ShapeSet] = field(default_factory=list)
    tolerances: dict[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    timing: TimingSettings = field(default_factory=TimingSettings)
    limits: dict[str, Any] = field(default_factory=dict)  # overrides of sandboxes.base.Limits
    hardware: str = "cpu"  # the task's target hardware
    slug: str = ""

    # -- building -----------------------------------------------------------

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], files: Mapping[str, str]) -> GradingSpec:
        """Build from a parsed ``task.toml`` and the bundle's files (path -> text)."""
        kind = manifest.get("kind", "kernel")
        if kind != "kernel":
            raise SpecError("kind", f"kernel grading needs kind = 'kernel', got {kind!r}")
        reference_path, reference_files, shared = _split_files(manifest, files)
        grading = manifest.get("grading")
        if grading is None:
            raise SpecError("grading", "missing: a kernel task needs a [grading] section")
        spec = _parse_grading(_table("grading", grading), files[reference_path])
        spec.reference_path = reference_path
        spec.files = reference_files
        spec.shared_files = shared
        spec.hardware = _str_field("hardware", manifest.get("hardware", "cpu"))
        spec.slug = _str_field("slug", manifest.get("slug", ""))
        return spec

    @classmethod
    def from_bundle_dir(cls, path: str | Path) -> GradingSpec:
        folder = Path(path)
        manifest_path = folder / "task.toml"
        try:
            manifest = tomllib.loads(manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise SpecError("task.toml", f"not found in {folder}") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SpecError("task.toml", f"not valid TOML: {exc}") from exc
        files: dict[str, str] = {}
        for index, entry in enumerate(_list("files", manifest.get("files", []))):
            rel = _str_field(f"files[{index}].path", _table(f"files[{index}]", entry).get("path"))
            target = (folder / rel).resolve()
            if not target.is_relative_to(folder.resolve()):
                raise SpecError(f"files[{index}].path", f"{rel!r} points outside the bundle")
            try:
                files[rel] = target.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SpecError(f"files[{index}].path", f"cannot read {rel!r}: {exc}") from exc
        return cls.from_manifest(manifest, files)

    @classmethod
    def from_problem_file(cls, path: str | Path, *, language: str = "pytorch") -> GradingSpec:
        """A bare KernelBench or GPU MODE problem file (see ``problem_file_task``)."""
        return cls.from_manifest(*problem_file_task(path, language=language))

    # -- queries --------------------------------------------------------------

    @property
    def reference_source(self) -> str:
        return self.files[self.reference_path]

    def shapes_for(self, host_kind: str) -> list[ShapeSet]:
        return [shape for shape in self.shapes if shape.applies_to(host_kind)]

    def tolerance_for(self, dtype_name: str) -> Tolerance:
        return self.tolerances.get(dtype_name, EXACT)

    def effective_limits(self, base: Limits) -> Limits:
        return base.with_overrides(self.limits)

    # -- travel -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["shapes"] = [
            {"name": s.name, "params": s.params, "hosts": list(s.hosts) if s.hosts else None}
            for s in self.shapes
        ]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GradingSpec:
        values = dict(data)
        values["shapes"] = [
            ShapeSet(s["name"], dict(s["params"]), tuple(s["hosts"]) if s["hosts"] else None)
            for s in values.get("shapes", [])
        ]
        values["tolerances"] = {
            name: Tolerance(**tol) for name, tol in values.get("tolerances", {}).items()
        }
        values["timing"] = TimingSettings(**values.get("timing", {}))
        return cls(**values)


# -- format detection ------------------------------------------------------------


def _top_level_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise SpecError("reference", f"not valid Python: {exc}") from exc
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def problem_file_task(
    path: str | Path, *, language: str = "pytorch"
) -> tuple[dict[str, Any], dict[str, str]]:
    """A bare KernelBench or GPU MODE problem file as a task: the manifest a bundle
    of it would have (default shapes and tolerances) and its files.

    Sibling modules the problem imports (GPU MODE's ``task.py``, ``utils.py``)
    come along to the reference process; ``task.py`` also goes beside the
    solution, which may import its type names.
    """
    source_path = Path(path)
    try:
        source = source_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError("reference", f"cannot read {source_path}: {exc}") from exc
    files = {source_path.name: source}
    entries = [{"path": source_path.name, "role": "reference", "visibility": "hidden"}]
    for module in _imported_names(source):
        sibling = source_path.with_name(f"{module}.py")
        if sibling.is_file() and sibling != source_path:
            files[sibling.name] = sibling.read_text(encoding="utf-8")
            visibility = "prompt" if module == "task" else "hidden"
            entries.append({"path": sibling.name, "role": "other", "visibility": visibility})
    manifest = {
        "slug": source_path.stem,
        "kind": "kernel",
        "hardware": "cpu",
        "files": entries,
        "grading": {"format": detect_format(source), "language": language},
    }
    return manifest, files


def detect_format(source: str) -> str:
    """``kernelbench`` or ``gpumode``, from the names the reference defines."""
    names = _top_level_names(source)
    if {"Model", "get_inputs", "get_init_inputs"} <= names:
        return "kernelbench"
    if {"ref_kernel", "generate_input"} <= names:
        return "gpumode"
    raise SpecError(
        "reference",
        "neither KernelBench (Model, get_inputs, get_init_inputs) "
        "nor GPU MODE (ref_kernel, generate_input)",
    )


def _imported_names(source: str) -> list[str]:
    modules: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            modules.extend(alias.name.split(".")[0] for alias in node.names)
    return modules


def _default_shape(problem_format: str, source: str) -> ShapeSet:
    if problem_format == "gpumode":
        required = _required_parameters(source, "generate_input")
        if required:
            raise SpecError(
                "grading.shapes",
                f"generate_input() needs {', '.join(required)}: a GPU MODE problem with "
                "required sizes must come as a bundle with [[grading.shapes]]",
            )
    return ShapeSet("default", {})


def _required_parameters(source: str, function: str) -> list[str]:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            args = node.args
            positional = args.posonlyargs + args.args
            without_default = positional[: len(positional) - len(args.defaults)]
            kw_required = [
                a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None
            ]
            return [a.arg for a in without_default + kw_required if a.arg != "seed"]
    return []


# -- the [[files]] table ---------------------------------------------------------


def _split_files(
    manifest: Mapping[str, Any], files: Mapping[str, str]
) -> tuple[str, dict[str, str], dict[str, str]]:
    references: list[str] = []
    reference_side: dict[str, str] = {}
    shared: dict[str, str] = {}
    for index, raw in enumerate(_list("files", manifest.get("files", []))):
        entry = _table(f"files[{index}]", raw)
        path = _str_field(f"files[{index}].path", entry.get("path"))
        role = entry.get("role", "other")
        if path not in files:
            raise SpecError(f"files[{index}].path", f"{path!r} is listed but was not provided")
        if role == "reference":
            references.append(path)
        if role in REFERENCE_SIDE_ROLES:
            reference_side[path] = files[path]
        if entry.get("visibility") == "prompt" and role not in ("statement", "solution"):
            shared[path] = files[path]
    if len(references) != 1:
        raise SpecError(
            "files",
            f"a kernel task needs exactly one file with role reference (found {len(references)})",
        )
    if not references[0].endswith(".py"):
        raise SpecError("files", f"the reference {references[0]!r} must be a .py file")
    return references[0], reference_side, shared


# -- the [grading] table ---------------------------------------------------------

_GRADING_KEYS = (
    "format",
    "language",
    "trials",
    "seed_inputs",
    "shapes",
    "tolerances",
    "timing",
    "limits",
)


def _parse_grading(grading: Mapping[str, Any], reference_source: str) -> GradingSpec:
    _known_keys("grading", grading, _GRADING_KEYS)
    if "format" not in grading:
        raise SpecError("grading.format", f"missing: one of {', '.join(FORMATS)}")
    problem_format = _choice("grading.format", grading["format"], FORMATS)
    if "language" not in grading:
        raise SpecError("grading.language", f"missing: one of {', '.join(LANGUAGES)}")
    spec = GradingSpec(
        format=problem_format,
        language=_choice("grading.language", grading["language"], LANGUAGES),
        reference_path="",
        files={},
        trials=_int("grading.trials", grading.get("trials", MIN_TRIALS), MIN_TRIALS, MAX_TRIALS),
        seed_inputs=_bool("grading.seed_inputs", grading.get("seed_inputs", True)),
        tolerances=_parse_tolerances(grading.get("tolerances", {})),
        timing=_parse_timing(grading.get("timing", {})),
        limits=_parse_limits(grading.get("limits", {})),
    )
    raw_shapes = grading.get("shapes")
    if raw_shapes is None:
        spec.shapes = [_default_shape(problem_format, reference_source)]
    else:
        spec.shapes = _parse_shapes(raw_shapes, problem_format)
    if spec.timing.shape is not None and spec.timing.shape not in {s.name for s in spec.shapes}:
        raise SpecError("grading.timing.shape", f"no shape set is named {spec.timing.shape!r}")
    return spec


def _parse_shapes(raw: Any, problem_format: str) -> list[ShapeSet]:
    entries = _list("grading.shapes", raw)
    if not entries:
        raise SpecError("grading.shapes", "must list at least one shape set")
    shapes: list[ShapeSet] = []
    for index, item in enumerate(entries):
        where = f"grading.shapes[{index}]"
        table = _table(where, item)
        name = _str_field(f"{where}.name", table.get("name", f"shape-{index + 1}"))
        if not name:
            raise SpecError(f"{where}.name", "must not be empty")
        if name in {s.name for s in shapes}:
            raise SpecError(f"{where}.name", f"{name!r} is used by another shape set")
        hosts = None
        if "hosts" in table:
            hosts = tuple(
                _choice(f"{where}.hosts", h, HOST_KINDS)
                for h in _list(f"{where}.hosts", table["hosts"])
            )
            if not hosts:
                raise SpecError(f"{where}.hosts", "must name at least one of cpu, gpu")
        params = {k: v for k, v in table.items() if k not in RESERVED_SHAPE_KEYS}
        for key, value in params.items():
            _check_shape_param(f"{where}.{key}", key, value, problem_format)
        shapes.append(ShapeSet(name, params, hosts))
    return shapes


def _check_shape_param(where: str, key: str, value: Any, problem_format: str) -> None:
    if not key.isidentifier():
        raise SpecError(where, "must be a Python identifier (a module global or keyword)")
    if problem_format == "gpumode" and key == "seed":
        raise SpecError(where, "is reserved: the harness passes its own seed")
    if not _plain_value(value):
        raise SpecError(where, "must be a number, string, boolean or a list of them")


def _plain_value(value: Any) -> bool:
    if isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain_value(item) for item in value)
    return False


def _parse_tolerances(raw: Any) -> dict[str, Tolerance]:
    tolerances = dict(DEFAULT_TOLERANCES)
    for dtype, entry in _table("grading.tolerances", raw).items():
        where = f"grading.tolerances.{dtype}"
        if dtype not in DTYPE_NAMES:
            raise SpecError(where, f"unknown dtype; known: {', '.join(DTYPE_NAMES)}")
        table = _table(where, entry)
        _known_keys(where, table, ("atol", "rtol"))
        values = {}
        for key in ("atol", "rtol"):
            if key not in table:
                raise SpecError(f"{where}.{key}", "missing")
            values[key] = _number(f"{where}.{key}", table[key], minimum=0.0)
        tolerances[dtype] = Tolerance(**values)
    return tolerances


def _parse_timing(raw: Any) -> TimingSettings:
    table = _table("grading.timing", raw)
    _known_keys("grading.timing", table, [f.name for f in dataclasses.fields(TimingSettings)])
    defaults = TimingSettings()
    where = "grading.timing"
    timing = TimingSettings(
        warmup=_int(f"{where}.warmup", table.get("warmup", defaults.warmup), 0, 1000),
        min_batches=_int(
            f"{where}.min_batches", table.get("min_batches", defaults.min_batches), 1, 10000
        ),
        max_batches=_int(
            f"{where}.max_batches", table.get("max_batches", defaults.max_batches), 1, 10000
        ),
        target_rel_error=_number(
            f"{where}.target_rel_error",
            table.get("target_rel_error", defaults.target_rel_error),
            minimum=0.0,
            positive=True,
            maximum=1.0,
        ),
        budget_s=_number(
            f"{where}.budget_s",
            table.get("budget_s", defaults.budget_s),
            minimum=0.0,
            positive=True,
        ),
        call_timeout_s=_number(
            f"{where}.call_timeout_s",
            table.get("call_timeout_s", defaults.call_timeout_s),
            minimum=0.0,
            positive=True,
        ),
        shape=_str_field(f"{where}.shape", table["shape"]) if "shape" in table else None,
    )
    if timing.max_batches < timing.min_batches:
        raise SpecError(f"{where}.max_batches", "must be at least min_batches")
    return timing


def _parse_limits(raw: Any) -> dict[str, Any]:
    table = dict(_table("grading.limits", raw))
    try:
        Limits().with_overrides(table)
    except InvalidLimits as exc:
        raise SpecError("grading.limits", str(exc)) from exc
    return table


# -- field checks ---------------------------------------------------------------


def _table(where: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(where, "must be a table")
    return value


def _list(where: str, value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise SpecError(where, "must be a list")
    return list(value)


def _known_keys(where: str, table: Mapping[str, Any], known: Any) -> None:
    for key in table:
        if key not in known:
            raise SpecError(f"{where}.{key}", f"unknown key; known: {', '.join(known)}")


def _str_field(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise SpecError(where, "must be a string")
    return value


def _choice(where: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise SpecError(where, f"must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SpecError(where, "must be true or false")
    return value


def _int(where: str, value: Any, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(where, "must be an integer")
    if not minimum <= value <= maximum:
        raise SpecError(where, f"must be between {minimum} and {maximum}, got {value}")
    return value


def _number(
    where: str,
    value: Any,
    *,
    minimum: float,
    positive: bool = False,
    maximum: float | None = None,
) -> float:
    kind = "positive" if positive else "non-negative"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(where, f"must be a {kind} number")
    if value < minimum or (positive and value == 0):
        raise SpecError(where, f"must be a {kind} number")
    if maximum is not None and value > maximum:
        raise SpecError(where, f"must be at most {maximum}")
    return float(value)
