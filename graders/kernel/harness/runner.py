"""Loading a problem module and running batches of calls, inside the sandbox.

The same code serves the reference process (author code) and the submission
process (hostile code): only the module and the entry points differ, so a
submission cannot tell a timed call from a correctness one by the path its
calls take.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import random
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ENTRY_POINTS = {
    ("kernelbench", "reference"): ("Model", "get_inputs", "get_init_inputs"),
    ("kernelbench", "submission"): ("ModelNew",),
    ("gpumode", "reference"): ("ref_kernel", "generate_input"),
    ("gpumode", "submission"): ("custom_kernel",),
}
MESSAGE_CAP = 4000
TRACEBACK_CAP = 6000

# Captured at import of this module, before any submission code exists.
_perf_counter = time.perf_counter
_no_grad = torch.no_grad


class HarnessFailure(Exception):
    """Something the problem code did, described for the grader."""

    def __init__(self, where: str, exc: BaseException | None = None, message: str = "") -> None:
        super().__init__(message)
        self.where = where
        self.details = (
            describe(exc, where)
            if exc is not None
            else {
                "where": where,
                "type": "HarnessFailure",
                "message": message[:MESSAGE_CAP],
                "traceback": "",
            }
        )


def _safe_text(make: Callable[[], str], cap: int) -> str:
    try:
        text = make()
    except BaseException:  # a hostile __str__ may raise anything
        return "<unprintable>"
    return text if len(text) <= cap else text[: cap // 2] + "\n…\n" + text[-cap // 2 :]


def _type_name(kind: type) -> str:
    """A builtin exception by its bare name (``SyntaxError``); any other by module and
    name (``torch.OutOfMemoryError``, ``solution.SyntaxError``), so that a class the
    solution defines cannot pass for a builtin one."""
    module = type.__dict__["__module__"].__get__(kind)
    name = type.__dict__["__qualname__"].__get__(kind)
    return name if module == "builtins" else f"{module}.{name}"


def describe(exc: BaseException, where: str) -> dict[str, Any]:
    return {
        "where": where,
        "type": _safe_text(lambda: _type_name(type(exc)), 200),
        "message": _safe_text(lambda: str(exc), MESSAGE_CAP),
        "traceback": _safe_text(lambda: "".join(traceback.format_exception(exc)), TRACEBACK_CAP),
    }


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed % (2**32))


def import_file(path: Path) -> Any:
    """Import a file as a module named after it, unless that name is taken
    (``time.py`` must not replace the ``time`` module)."""
    name = path.stem
    if name in sys.modules or name in sys.stdlib_module_names or not name.isidentifier():
        name = f"_benchwright_{path.stem}" if path.stem.isidentifier() else "_benchwright_entry"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The name under which a re-evaluated module finds a shape set's sizes.
_SIZES = "__benchwright_sizes__"


def _assigned_names(statement: ast.stmt) -> set[str]:
    """Module-level names a statement binds by assignment (``a = b = 1``, ``a, b = …``,
    ``a: int = 1``, ``a += 1``)."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    else:
        return set()
    names = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def reevaluate(module: Any, sizes: dict[str, Any]) -> Any:
    """The reference module evaluated again from its source with a shape set's sizes in
    place of its own: right after each top-level statement that assigns one of them, the
    shape set's value is assigned instead, so every global derived from a size later in
    the module (``bias_shape = (out_channels, 1, 1)``) follows the new size. Sizes the
    module never assigns are set as attributes afterwards."""
    path = Path(module.__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    body: list[ast.stmt] = []
    assigned: set[str] = set()
    for statement in tree.body:
        body.append(statement)
        for name in sorted(_assigned_names(statement) & sizes.keys()):
            assigned.add(name)
            body.append(
                ast.Assign(
                    targets=[ast.Name(name, ast.Store())],
                    value=ast.Subscript(
                        ast.Name(_SIZES, ast.Load()), ast.Constant(name), ast.Load()
                    ),
                )
            )
    tree.body = body
    code = compile(ast.fix_missing_locations(tree), str(path), "exec")
    fresh = types.ModuleType(module.__name__)
    fresh.__file__ = module.__file__
    setattr(fresh, _SIZES, dict(sizes))
    sys.modules[module.__name__] = fresh
    exec(code, fresh.__dict__)  # noqa: S102 - the reference's own source, in its sandbox
    for name, value in sizes.items():
        if name not in assigned:
            setattr(fresh, name, value)
    return fresh


def _as_written(module: Any, name: str, value: Any) -> Any:
    if isinstance(value, list) and not isinstance(getattr(module, name, None), list):
        return tuple(value)
    return value


class Problem:
    """The loaded module of one side and what calling it means."""

    def __init__(self, module: Any, problem_format: str, role: str, device: str) -> None:
        self.module = module
        self.format = problem_format
        self.role = role
        self.device = device
        self.model: Any = None
        self.params: dict[str, Any] = {}
        self.original: Any = None  # the reference's module as imported, once re-evaluated
        missing = [
            name for name in ENTRY_POINTS[(problem_format, role)] if not hasattr(module, name)
        ]
        if missing:
            raise HarnessFailure("entry", message=f"does not define {', '.join(missing)}")
        self.has_check = callable(getattr(module, "check_implementation", None))

    def setup(self, params: dict[str, Any], init_seed: int, init: Any) -> Any:
        """Prepare one shape set; the reference returns what the submission needs."""
        self.params = dict(params)
        if self.format != "kernelbench":
            return None
        # A shape set writes a size tuple (``input_shape = (8192,)``) as a TOML array:
        # it becomes a tuple again, unless the module itself wrote a list.
        written = self.original or self.module
        params = {name: _as_written(written, name, value) for name, value in params.items()}
        if self.role == "reference":
            if params or self.original is not None:
                # Sizes change what the module derives from them: evaluate it again with
                # this shape set's (the original module again for a set without sizes).
                self.original = self.original or self.module
                self.module = reevaluate(self.original, params) if params else self.original
                sys.modules[self.original.__name__] = self.module
        else:
            for name, value in params.items():
                setattr(self.module, name, value)
        seed_everything(init_seed)
        if self.role == "reference":
            init = list(self.module.get_init_inputs())
            self.model = self.module.Model(*init).to(self.device)
            return {"init": init, "state": dict(self.model.state_dict())}
        self.model = self.module.ModelNew(*init["init"]).to(self.device)
        self._copy_state(init["state"])
        return None

    def _copy_state(self, state: dict[str, torch.Tensor]) -> None:
        own = self.model.state_dict()
        with _no_grad():
            for name, value in state.items():
                if name in own and tuple(own[name].shape) == tuple(value.shape):
                    own[name].copy_(value)

    def generate(self, seed: int, seed_inputs: bool) -> Any:
        if self.format == "kernelbench":
            if seed_inputs:
                seed_everything(seed)
            return list(self.module.get_inputs())
        return self.module.generate_input(**self.params, seed=seed)

    def call(self, args: Any) -> Any:
        if self.format == "kernelbench":
            return self.model(*args)
        entry = self.module.ref_kernel if self.role == "reference" else self.module.custom_kernel
        return entry(args)

    def check(self, data: Any, output: Any) -> tuple[bool, str]:
        """GPU MODE's own check_implementation, normalised to (ok, message)."""
        result = self.module.check_implementation(data, output)
        if isinstance(result, tuple) and len(result) == 2:
            return bool(result[0]), str(result[1])
        if isinstance(result, str):
            return result == "", result
        return bool(result), ""


class Timer:
    """Per-call timing inside the process: wall clock with a device synchronise, or
    CUDA events with an L2 flush before each call (GPU only; not exercised on CPU
    hosts). The grader treats both as a cross-check only."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.sync: Callable[[], None] = torch.cuda.synchronize if self.cuda else (lambda: None)
        self.event = torch.cuda.Event if self.cuda else None
        self.flush_buffer: torch.Tensor | None = None
        if self.cuda:
            l2_bytes = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20))
            self.flush_buffer = torch.empty(
                2 * max(l2_bytes, 1 << 20), dtype=torch.uint8, device=device
            )

    def flush(self) -> None:
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
            self.sync()


def call_once(
    problem: Problem, args: Any, timer: Timer, use_events: bool
) -> tuple[Any, float, float | None]:
    """Run one call: (output, wall seconds by the in-process clock, event seconds)."""
    event_s = None
    with _no_grad():
        if use_events:
            timer.flush()
            start, end = timer.event(enable_timing=True), timer.event(enable_timing=True)  # type: ignore[misc]
            start.record()
        began = _perf_counter()
        output = problem.call(args)
        timer.sync()
        ended = _perf_counter()
        if use_events:
            end.record()
            timer.sync()
            event_s = start.elapsed_time(end) / 1000.0
    return output, ended - began, event_s


def profile_device_time(problem: Problem, args: Any, timer: Timer, calls: int) -> float | None:
    """Device time per call from the profiler (CUPTI), a second witness on GPUs.

    Runs the last call's inputs again without L2 flushes; only on CUDA hosts. Not
    exercised on CPU-only machines.
    """
    if not timer.cuda:
        return None
    from torch.profiler import ProfilerActivity, profile

    with _no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            problem.call(args)
        timer.sync()
    total_us = sum(event.self_device_time_total for event in prof.key_averages())
    return total_us / 1e6 / max(calls, 1)


# A trace summary for reviewers (``profile_ops``): what each row of the reply holds.
PROFILE_CALL = "benchwright::call"
PROFILE_NAME_CAP = 200
# Rows that are the profiler's own work, not the call's.
PROFILER_OWN = frozenset({"Activity Buffer Request"})
# The runtime calls that launch a kernel on a CUDA device.
LAUNCH_CALLS = frozenset(
    {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"}
)


def profile_operators(problem: Problem, args: Any, timer: Timer, calls: int, top: int) -> dict:
    """A few more calls of the last inputs under ``torch.profiler`` (CPU activities, and
    CUDA ones on a CUDA host), each inside a ``benchwright::call`` range, summarised
    here: the ``top`` operators by self time (CPU plus CUDA), each as
    ``[name, count, self CPU µs, self CUDA µs, total CPU µs]`` over all the calls;
    the calls' own CPU time and the part of it outside any operator (Python, or a C++
    extension the profiler does not see into); operators called directly by the call
    (no operator around them) and, on CUDA, kernel launches.

    Advisory only, for reviewers: it runs after the verdict, its figures come from this
    process (which the submission controls) and the grader only checks their types.
    What the calls print, and the profiler's own start-up chatter (C++, on stderr),
    is kept out of the logs."""
    from torch.profiler import ProfilerActivity, profile, record_function

    activities = [ProfilerActivity.CPU]
    if timer.cuda:
        activities.append(ProfilerActivity.CUDA)
    _flush()
    quiet = _outputs_to_null()
    try:
        with _no_grad(), profile(activities=activities) as prof:
            for _ in range(calls):
                with record_function(PROFILE_CALL):
                    problem.call(args)
                timer.sync()
    finally:
        _flush()
        _restore_outputs(quiet)
    call_us = outside_us = 0.0
    rows: list[tuple[str, int, float, float, float]] = []
    launches = 0
    for item in prof.key_averages():
        name = str(item.key)
        self_cuda = float(getattr(item, "self_device_time_total", 0.0) or 0.0)
        if name == PROFILE_CALL:
            # On CUDA the range shows twice, on the CPU and on the GPU (no CPU time there).
            call_us = max(call_us, float(item.cpu_time_total))
            outside_us = max(outside_us, float(item.self_cpu_time_total))
            continue
        if name in PROFILER_OWN:
            continue
        if name in LAUNCH_CALLS:
            launches += int(item.count)
        self_cpu, total = float(item.self_cpu_time_total), float(item.cpu_time_total)
        rows.append((name[:PROFILE_NAME_CAP], int(item.count), self_cpu, self_cuda, total))
    rows.sort(key=lambda row: row[2] + row[3], reverse=True)
    direct = 0
    for event in prof.events():
        parent = event.cpu_parent
        if parent is not None and parent.name == PROFILE_CALL and event.name != PROFILE_CALL:
            direct += 1
    return {
        "calls": calls,
        "operators": [list(row) for row in rows[:top]],
        "distinct": len(rows),
        "call_cpu_us": call_us,
        "outside_us": outside_us,
        "direct_ops": direct,
        "launches": launches if timer.cuda else None,
    }


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a stream the submission replaced
            stream.flush()


def _outputs_to_null() -> list[tuple[int, int]]:
    """stdout and stderr (fds 1 and 2) to /dev/null: what the profiled calls print
    cannot reach the submission's logs or their limit. The saved fds, to restore."""
    saved: list[tuple[int, int]] = []
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return saved
    try:
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
            except OSError:
                continue
            os.dup2(null, fd)
    finally:
        os.close(null)
    return saved


def _restore_outputs(saved: list[tuple[int, int]]) -> None:
    for fd, copy in saved:
        os.dup2(copy, fd)
        os.close(copy)
