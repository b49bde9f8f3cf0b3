"""Task kind -> its grader: the only list of kinds in the code.

The kinds shipped with the platform are registered when this module is first
imported (``BUILT_IN``: each a module path, imported lazily, so that asking for
the list of kinds does not import torch). A deployment adds its own kinds in
the environment, the same on web hosts and workers::

    BENCHWRIGHT_TASK_KINDS="quiz=mykinds.quiz:QuizKind,other=mykinds.other:Other"

and code (a test) may register more with ``register``.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Sequence

from .contract import CPU_QUEUE, TaskKind

# name -> "module:Class" of the kinds that ship with the platform.
BUILT_IN: dict[str, str] = {
    "kernel": "graders.kernel.kind:KernelKind",
    "debugging": "graders.debugging.kind:DebuggingKind",
    "profiling": "graders.profiling.kind:ProfilingKind",
    "serving": "graders.serving.kind:ServingKind",
}

EXTRA_KINDS_ENV = "BENCHWRIGHT_TASK_KINDS"
_ENTRY = re.compile(r"^([a-z][a-z0-9_-]*)=([\w.]+:\w+)$")


def from_environment(value: str | None = None) -> dict[str, str]:
    """The kinds a deployment adds (``name=module:Class``, comma-separated); a
    malformed entry is a ValueError naming it, so that a typo stops the process
    at start rather than leaving a kind unknown."""
    value = os.environ.get(EXTRA_KINDS_ENV, "") if value is None else value
    kinds: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in value.split(","))):
        match = _ENTRY.match(entry)
        if match is None:
            raise ValueError(f"{EXTRA_KINDS_ENV}: {entry!r} is not name=module:Class")
        kinds[match[1]] = match[2]
    return kinds


_DECLARED: dict[str, str] = {**BUILT_IN, **from_environment()}
_classes: dict[str, type[TaskKind] | str] = dict(_DECLARED)
_instances: dict[str, TaskKind] = {}
_lock = threading.Lock()


class UnknownKind(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"no grader is registered for {self.name!r} tasks (known: {', '.join(kinds())})"


def register(kind: type[TaskKind]) -> type[TaskKind]:
    """Register a kind (usable as a class decorator). Registering a name again
    replaces the earlier grader."""
    with _lock:
        _classes[kind.name] = kind
        _instances.pop(kind.name, None)
    return kind


def unregister(name: str) -> None:
    """Forget a kind registered with ``register`` (tests); built-in kinds and those of
    the environment come back."""
    with _lock:
        _instances.pop(name, None)
        if name in _DECLARED:
            _classes[name] = _DECLARED[name]
        else:
            _classes.pop(name, None)


def kinds() -> tuple[str, ...]:
    """Every registered kind's name, built-in ones first."""
    return tuple(_classes)


def is_kind(name: object) -> bool:
    return isinstance(name, str) and name in _classes


def get(name: str) -> TaskKind:
    """The grader of a kind; ``UnknownKind`` if none is registered."""
    with _lock:
        instance = _instances.get(name)
        if instance is not None:
            return instance
        target = _classes.get(name)
        if target is None:
            raise UnknownKind(name)
        if isinstance(target, str):
            module, _, attribute = target.partition(":")
            target = getattr(importlib.import_module(module), attribute)
            if not (isinstance(target, type) and issubclass(target, TaskKind)):
                raise TypeError(f"{module}:{attribute} is not a TaskKind")
            if target.name != name:
                raise TypeError(f"{module}:{attribute} is the {target.name!r} kind, not {name!r}")
        instance = target()
        _instances[name] = instance
        return instance


def choices() -> list[tuple[str, str]]:
    """(name, label) of every kind, for forms and model fields. Imports the kinds'
    modules (not the graders' heavy dependencies)."""
    return [(name, get(name).label) for name in kinds()]


def grading_queue(kind: str, hardware: str, gpu_pools: Sequence[str]) -> str:
    """The queue a grading of a ``kind`` task targeting ``hardware`` goes to, given the
    GPU pools this deployment has: the only queue routing in the code. A kind with no
    grader goes to the CPU pool, whose worker answers that it has none."""
    if not is_kind(kind):
        return CPU_QUEUE
    return get(kind).needs(hardware=hardware, gpu_pools=gpu_pools).queue
