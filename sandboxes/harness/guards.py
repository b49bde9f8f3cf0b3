"""In-process defences: originals captured before any submission code runs,
integrity checks against them, and guard-banded inputs.

These checks run in the submission's own process, so a determined submission
can defeat them; they are a first line only. What decides a verdict is what
the trusted grader checks from outside (outputs against the reference
process, wall time around batches, processes and threads via /proc).
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import threading
import time
import types
from typing import Any

import torch

# Functions the harness relies on, or that a submission could patch to fake a
# result: each must still be the very object captured at start-up.
WATCHED: tuple[tuple[str, str], ...] = (
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "process_time"),
    ("torch", "allclose"),
    ("torch", "isclose"),
    ("torch", "equal"),
    ("torch.testing", "assert_close"),
    ("torch", "randint"),
    ("torch", "manual_seed"),
    ("torch", "empty"),
    ("torch", "frombuffer"),
    ("torch", "no_grad"),
    ("torch.Tensor", "copy_"),
    ("torch.Tensor", "reshape"),
    ("torch.Tensor", "contiguous"),
    ("torch.Tensor", "view"),
    ("torch.Tensor", "to"),
    ("torch.Tensor", "__getitem__"),
    ("torch.Tensor", "__eq__"),
    ("torch.Tensor", "sum"),
    ("torch.Tensor", "detach"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda", "Event"),
    ("torch.cuda.Event", "record"),
    ("torch.cuda.Event", "elapsed_time"),
    ("torch.cuda.Event", "synchronize"),
    ("os", "write"),
    ("os", "read"),
    ("os", "readv"),
    ("os", "listdir"),
    ("json", "dumps"),
    ("json", "loads"),
    ("threading", "active_count"),
    ("builtins", "isinstance"),
    ("builtins", "type"),
    ("builtins", "len"),
    ("builtins", "getattr"),
)

_ROOTS = {
    "time": time,
    "torch": torch,
    "os": os,
    "json": json,
    "threading": threading,
    "builtins": builtins,
}
_MISSING = object()


def _resolve(path: str, name: str) -> Any:
    head, *rest = path.split(".")
    target: Any = _ROOTS[head]
    for part in rest:
        target = getattr(target, part, _MISSING)
        if target is _MISSING:
            return _MISSING
    # Look in the class dict first so a method's identity is checked, not a bound copy.
    if isinstance(target, type) and name in vars(target):
        return vars(target)[name]
    return getattr(target, name, _MISSING)


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def child_pids() -> list[int]:
    pids: list[int] = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as handle:
                pids.extend(int(pid) for pid in handle.read().split())
        except OSError:
            continue
    return pids


class Sentinel:
    """The originals and the baseline, captured before the submission is imported."""

    def __init__(self, harness_modules: list[types.ModuleType]) -> None:
        self.functions = {f"{path}.{name}": _resolve(path, name) for path, name in WATCHED}
        self.modules = {
            name: sys.modules.get(name) for name in ("torch", "time", "os", "json", "threading")
        }
        self.harness = {module.__name__: (module, _code_of(module)) for module in harness_modules}
        self.threads = thread_count()

    def rebaseline_threads(self) -> None:
        self.threads = thread_count()

    def violations(self) -> list[str]:
        found = []
        for qualified, original in self.functions.items():
            path, _, name = qualified.rpartition(".")
            if _resolve(path, name) is not original:
                found.append(f"{qualified} was replaced")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}] was replaced")
        found.extend(self._harness_violations())
        found.extend(self._process_violations())
        return found

    def _harness_violations(self) -> list[str]:
        found = []
        for name, (module, code) in self.harness.items():
            if sys.modules.get(name) is not module:
                found.append(f"harness module {name} was replaced in sys.modules")
            elif not _same_code(_code_of(module), code):
                found.append(f"harness module {name} was modified")
        return found

    def _process_violations(self) -> list[str]:
        found = []
        extra = [t for t in threading.enumerate() if t is not threading.main_thread()]
        if extra:
            names = ", ".join(thread.name for thread in extra[:5])
            found.append(f"{len(extra)} Python thread(s) still running: {names}")
        threads = thread_count()
        if threads > self.threads:
            found.append(f"{threads - self.threads} extra thread(s) in the process")
        children = child_pids()
        if children:
            found.append(f"{len(children)} child process(es) still running")
        return found


def _code_of(module: types.ModuleType) -> dict[str, Any]:
    """Identity of every global of a harness module and of each function's code.

    Harness globals are functions, classes and constants captured at start-up
    (e.g. the clock); replacing any of them, or a function's ``__code__``,
    shows up here.
    """
    codes: dict[str, Any] = {}
    for name, value in vars(module).items():
        if name.startswith("__") and name != "__dict__":
            continue
        codes[name] = (value, getattr(value, "__code__", None))
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                if isinstance(member, types.FunctionType):
                    codes[f"{name}.{attr}"] = (member, member.__code__)
    return codes


def _same_code(now: dict[str, Any], then: dict[str, Any]) -> bool:
    if now.keys() != then.keys():
        return False
    return all(now[key][0] is then[key][0] and now[key][1] is then[key][1] for key in then)


# -- guard bands --------------------------------------------------------------------


def _sentinel_value(dtype: torch.dtype) -> Any:
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def pad_elements(numel: int) -> int:
    return min(max(1024, numel // 64), 1 << 22)


class GuardedInput:
    """A tensor living in the middle of a larger buffer whose margins hold sentinels."""

    def __init__(
        self,
        dtype: torch.dtype,
        shape: list[int],
        data: memoryview,
        device: str,
        keep_pristine: bool,
    ) -> None:
        numel = 1
        for dim in shape:
            numel *= dim
        self.pad = pad_elements(numel)
        self.buffer = torch.empty(numel + 2 * self.pad, dtype=dtype, device=device)
        self.buffer[: self.pad].fill_(_sentinel_value(dtype))
        self.buffer[-self.pad :].fill_(_sentinel_value(dtype))
        self.margin = self.buffer[: self.pad].view(torch.uint8).clone()
        self.tensor = self.buffer[self.pad : self.pad + numel].view(shape)
        if numel:
            source = torch.frombuffer(data, dtype=torch.uint8).to(device)
            self.tensor.reshape(-1).view(torch.uint8).copy_(source)
        self.pristine = self.tensor.clone() if keep_pristine else None

    def margins_intact(self) -> bool:
        head = self.buffer[: self.pad].view(torch.uint8)
        tail = self.buffer[-self.pad :].view(torch.uint8)
        return bool(torch.equal(head, self.margin)) and bool(torch.equal(tail, self.margin))

    def unchanged(self) -> bool:
        if self.pristine is None or self.tensor.numel() == 0:
            return True
        now = self.tensor.reshape(-1).view(torch.uint8)
        return bool(torch.equal(now, self.pristine.reshape(-1).view(torch.uint8)))
