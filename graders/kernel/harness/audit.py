"""In-process checks: originals captured before any submission code runs, and the
hooks through which code could run outside a call.

These run in the submission's own process, so a determined submission can
defeat them; they are a first line only, there to name what was tried. What
decides a verdict is checked outside: every output is read and compared by
the grader before the next call's inputs exist, and the time of a batch is
the CPU time the kernel counted for the whole sandbox while it was not frozen
(see ``graders.kernel.grading``).
"""

from __future__ import annotations

import builtins
import functools
import gc
import json
import os
import signal
import sys
import threading
import time
import types
import weakref
from collections.abc import Mapping
from typing import Any

import torch

# Functions the harness relies on, or that a submission could patch to fake a
# result or to run code inside the harness's own steps: each must still be the
# very object captured at start-up.
WATCHED: tuple[tuple[str, str], ...] = (
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "process_time"),
    ("time", "thread_time"),
    ("torch", "allclose"),
    ("torch", "isclose"),
    ("torch", "equal"),
    ("torch.testing", "assert_close"),
    ("torch", "manual_seed"),
    ("torch", "empty"),
    ("torch", "frombuffer"),
    ("torch", "no_grad"),
    ("torch.Tensor", "__torch_function__"),
    ("torch.Tensor", "__torch_dispatch__"),
    ("torch.Tensor", "copy_"),
    ("torch.Tensor", "contiguous"),
    ("torch.Tensor", "view"),
    ("torch.Tensor", "to"),
    ("torch.Tensor", "data_ptr"),
    ("torch.Tensor", "untyped_storage"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda", "Event"),
    ("torch.cuda.Event", "record"),
    ("torch.cuda.Event", "elapsed_time"),
    ("torch.cuda.Event", "synchronize"),
    ("os", "write"),
    ("os", "read"),
    ("os", "readv"),
    ("os", "_exit"),
    ("json", "dumps"),
    ("json", "loads"),
    ("sys", "excepthook"),
    ("sys", "unraisablehook"),
    ("threading", "excepthook"),
    ("builtins", "__import__"),
    ("builtins", "isinstance"),
    ("builtins", "type"),
    ("builtins", "len"),
    ("builtins", "getattr"),
)

# Functions torch itself wraps when a submodule is imported: importing torch._dynamo (as
# torch.compile does) replaces torch.manual_seed with a wrapper whose ``__wrapped__`` is
# the original. Nothing decisive goes through them (outputs are checked outside).
WRAPPED_BY_TORCH = frozenset({"torch.manual_seed"})

_ROOTS = {
    "time": time,
    "torch": torch,
    "os": os,
    "json": json,
    "sys": sys,
    "threading": threading,
    "builtins": builtins,
}
_MISSING = object()
# Captured now: the checks must not go through anything the submission can replace.
_len_function_modes = torch._C._len_torch_function_stack
_len_dispatch_modes = torch._C._len_torch_dispatch_stack
_getprofile = sys.getprofile
_gettrace = sys.gettrace
_setitimer = signal.setitimer
_getsignal = signal.getsignal
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_SIGNALS = sorted(set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP})


def _resolve(path: str, name: str) -> Any:
    return _resolve_parts(path.split("."), name)


def _resolve_parts(parts: list[str], name: str) -> Any:
    head, *rest = parts
    target: Any = _ROOTS[head]
    for part in rest:
        target = getattr(target, part, _MISSING)
        if target is _MISSING:
            return _MISSING
    # Look in the class dict first so a method's identity is checked, not a bound copy.
    if isinstance(target, type) and name in vars(target):
        return vars(target)[name]
    return getattr(target, name, _MISSING)


# Finalizers torch registers itself (torch.compile's first call registers dozens), by
# the module and qualified name of the function they call: matched by identity with the
# object found there when checked, never by the name the function gives itself. None of
# them computes on tensors.
TORCH_FINALIZERS = (
    ("torch.library", "_del_library"),
    ("torch._dynamo.guards", "CheckFunctionManager.invalidate"),
)


def _finalizers() -> dict[Any, Any]:
    return weakref.finalize._registry  # type: ignore[attr-defined,no-any-return]


def _torchs_own_finalizer(func: Any) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    function = getattr(func, "__func__", func)
    for module_name, qualname in TORCH_FINALIZERS:
        target: Any = sys.modules.get(module_name)
        for part in qualname.split("."):
            target = getattr(target, part, None)
        if target is not None and function is target:
            return True
    return False


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


def stop_timers() -> bool:
    """Disarm every interval timer; whether one was running. Checked first, and by
    stopping it, so that a handler firing faster than it returns cannot starve the
    harness's own checks of the time to report it."""
    running = False
    for timer in _TIMERS:
        running |= _setitimer(timer, 0.0) != (0.0, 0.0)
    return running


def hooks_in_effect(signals: Mapping[Any, Any] | None = None) -> list[str]:
    """Ways to run code after a call has returned, cheap enough to check after every
    call: modes on torch's stacks, profile and trace hooks, timers and signal handlers
    (against ``signals``, the handlers captured at start-up)."""
    found = []
    if stop_timers():
        found.append("an interval timer (signal.setitimer) is running")
    if _len_function_modes():
        found.append("a TorchFunctionMode is left on torch's stack")
    if _len_dispatch_modes():
        found.append("a TorchDispatchMode is left on torch's stack")
    if _getprofile() is not None or getattr(threading, "_profile_hook", None) is not None:
        found.append("a profile hook (sys.setprofile / threading.setprofile) is installed")
    if _gettrace() is not None or getattr(threading, "_trace_hook", None) is not None:
        found.append("a trace hook (sys.settrace / threading.settrace) is installed")
    if signals is not None:
        changed = [sig for sig in _SIGNALS if _getsignal(sig) is not signals[sig]]
        if changed:
            names = ", ".join(signal.Signals(sig).name for sig in changed[:5])
            found.append(f"signal handlers were installed ({names})")
    return found


class Audit:
    """The originals and baselines, captured before the submission is imported."""

    def __init__(self, harness_modules: list[types.ModuleType]) -> None:
        self.functions = [
            (f"{path}.{name}", path.split("."), name, _resolve(path, name))
            for path, name in WATCHED
        ]
        self.modules = {
            name: sys.modules.get(name) for name in ("torch", "time", "os", "json", "threading")
        }
        self.harness = [(module, _Snapshot(module)) for module in harness_modules]
        self.signals = {sig: _getsignal(sig) for sig in _SIGNALS}
        self.gc_callbacks = list(gc.callbacks)
        self.audit_hooks_added = 0
        sys.addaudithook(self._on_audit_event)
        self.threads = thread_count()
        self.finalizers: set[Any] = set(_finalizers())

    def _on_audit_event(self, event: str, _args: tuple[Any, ...]) -> None:
        if event == "sys.addaudithook":
            self.audit_hooks_added += 1

    def after_import(self) -> None:
        """Libraries may register finalizers when imported; only new ones registered
        by calls are counted.

        Exit callbacks (``atexit``) are not checked: the harness leaves through
        ``os._exit``, so they never run."""
        self.finalizers = set(_finalizers())

    def quick(self) -> list[str]:
        """The checks made after every call (a few microseconds): modes, profile and
        trace hooks, timers, gc callbacks, finalizers, audit hooks. Signal handlers,
        which take longer to compare, are checked after every batch."""
        return hooks_in_effect() + self._callback_violations()

    def violations(self) -> list[str]:
        found = hooks_in_effect(self.signals) + self._callback_violations()
        for qualified, parts, name, original in self.functions:
            now = _resolve_parts(parts, name)
            if now is original:
                continue
            if qualified in WRAPPED_BY_TORCH and getattr(now, "__wrapped__", None) is original:
                continue
            found.append(f"{qualified} was replaced")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}] was replaced")
        found.extend(self._harness_violations())
        found.extend(self._process_violations())
        return found

    def _harness_violations(self) -> list[str]:
        found = []
        for module, snapshot in self.harness:
            name = module.__name__
            if sys.modules.get(name) is not module:
                found.append(f"harness module {name} was replaced in sys.modules")
            elif not snapshot.holds():
                found.append(f"harness module {name} was modified")
        return found

    def _callback_violations(self) -> list[str]:
        found = []
        if len(gc.callbacks) != len(self.gc_callbacks) or any(
            now is not then for now, then in zip(gc.callbacks, self.gc_callbacks, strict=False)
        ):
            found.append("gc.callbacks were changed")
        if self.audit_hooks_added:
            found.append("an audit hook (sys.addaudithook) was added")
        if self._new_finalizers():
            found.append("weakref finalizers were registered by a call and are still pending")
        return found

    def _new_finalizers(self) -> bool:
        """Whether a call left a finalizer pending that is not torch's own bookkeeping
        (``torch.compile`` registers some on its first call)."""
        foreign = False
        for key, info in _snapshot(_finalizers()):
            if key in self.finalizers:
                continue
            if _torchs_own_finalizer(info.func):
                self.finalizers.add(key)
            else:
                foreign = True
        return foreign

    def _process_violations(self) -> list[str]:
        found = []
        extra = [t for t in threading.enumerate() if t is not threading.main_thread()]
        if extra:
            found.append(f"{len(extra)} Python thread(s) still running")
        threads = thread_count()
        if threads > self.threads:
            found.append(f"{threads - self.threads} extra thread(s) in the process")
        children = child_pids()
        if children:
            found.append(f"{len(children)} child process(es) still running")
        return found


class _Snapshot:
    """Identity of every global of a harness module, of each function's code, and of
    the methods of the module's own classes, taken at start-up.

    Harness globals are functions, classes and constants captured at start-up
    (e.g. the clock); replacing any of them, a function's ``__code__``, or adding
    a global or a method shows up here. Checked after every batch, so it is a flat
    list compared by identity: the check is part of each batch's measured time.
    """

    def __init__(self, module: types.ModuleType) -> None:
        self.entries: list[tuple[Mapping[str, Any], str, Any, Any]] = []
        # (namespace, its length, how many of its entries are checked)
        self.sizes: list[tuple[Mapping[str, Any], int, int]] = []
        self._take(vars(module))
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                self._take(vars(value), functions_only=True)

    def _take(self, namespace: Mapping[str, Any], functions_only: bool = False) -> None:
        for key, value in namespace.items():
            if key.startswith("__") and key != "__dict__":
                continue
            if functions_only and not isinstance(value, types.FunctionType):
                continue
            self.entries.append((namespace, key, value, getattr(value, "__code__", None)))
        self.sizes.append((namespace, len(namespace), _public_size(namespace, functions_only)))

    def holds(self) -> bool:
        for namespace, key, value, code in self.entries:
            if namespace.get(key, _MISSING) is not value:
                return False
            if code is not None and value.__code__ is not code:
                return False
        # Nothing added: the same length, or (the warnings module may add a dunder to
        # a module) the same number of checked entries.
        return all(
            len(namespace) == length or _public_size(namespace, index > 0) == size
            for index, (namespace, length, size) in enumerate(self.sizes)
        )


def _public_size(namespace: Mapping[str, Any], functions_only: bool) -> int:
    return sum(
        1
        for key, value in namespace.items()
        if not (key.startswith("__") and key != "__dict__")
        and (not functions_only or isinstance(value, types.FunctionType))
    )


def _snapshot(registry: dict[Any, Any]) -> list[tuple[Any, Any]]:
    """The registry's items, taken again if another thread (or a finalizer that a
    collection ran meanwhile) changed it while they were read."""
    while True:
        try:
            return list(registry.items())
        except RuntimeError:  # dictionary changed size during iteration
            continue
