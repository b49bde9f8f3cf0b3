"""A module's code on a namespace nobody else holds.

The program a re-profile grading runs shares the runner's interpreter, so it can
reach every module in ``sys.modules`` and every function it is handed, and through
a function's ``__globals__`` the namespace the function looks its names up in. A
program that rebinds one of those names for a while (the table a hook consults,
the function a check calls, a method of the runner's class) and puts it back
before the runner looks leaves no trace an identity check could see.

``sealed(module)`` gives the module's functions and classes again, each bound to a
private copy of the module's namespace: the same code objects, so everything that
recognises them by their code still does, but every name they look up is found in
a dict that only they hold. A sealed function handed to no one and called from a
frame the program cannot see (the runner's own thread; see ``profile_runner.main``)
runs exactly the code that was read from disk, on objects that were captured before
any program code existed.

The namespace gets its own copy of the builtins as well, taken when this module
is imported. The copy is shallow: dicts, lists and sets in the namespace are copied (a program
that empties the module's own table empties nothing of the copy's), the objects in
them are the same. Tables that hold closures (whose cells the program could
rebind) are built again by calling the sealed builders (``rebuild``).
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable, Iterable
from typing import Any

_module_dict = vars(types.ModuleType)["__dict__"].__get__
_BUILTINS = dict(vars(builtins))  # as they were when the runner started
_CONTAINERS = (dict, list, set)


def sealed(
    module: types.ModuleType,
    *,
    shared: Iterable[str] = (),
    left_open: Iterable[str] = (),
    rebuild: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """A private namespace holding ``module``'s functions and classes bound to it.

    ``shared``: containers kept as the module's own objects (a list the module's open
    functions append to, which the sealed code reads). ``left_open``: functions kept
    as the module's own, for code that must not run on the private namespace (what
    the program's thread runs: its frames are within the program's reach, and a frame
    shows its globals). ``rebuild`` runs last, on the namespace, to make its tables
    anew."""
    kept, opened = frozenset(shared), frozenset(left_open)
    namespace = dict(_module_dict(module))
    # Builtins too: a function finds len, type or next in the builtins its globals name
    # when it is made, and the program can rebind any name in the builtins module.
    namespace["__builtins__"] = dict(_BUILTINS)
    name = namespace["__name__"]
    for key, value in list(namespace.items()):
        kind = type(value)
        if key in kept or key in opened:
            continue
        if kind is types.FunctionType and value.__module__ == name:
            namespace[key] = _rebound(value, namespace)
        elif isinstance(value, type) and value.__module__ == name:
            namespace[key] = _reclassed(value, namespace)
        elif kind in _CONTAINERS:
            namespace[key] = kind(value)
    if rebuild is not None:
        rebuild(namespace)
    return namespace


def _rebound(function: types.FunctionType, namespace: dict[str, Any]) -> types.FunctionType:
    copy = types.FunctionType(
        function.__code__,
        namespace,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    return copy


def _reclassed(cls: type, namespace: dict[str, Any]) -> type:
    """The class again, with its functions bound to ``namespace``: a class of its own,
    so that an attribute the program sets on the module's class (a property that
    shadows an instance attribute) is not on it."""
    body: dict[str, Any] = {}
    for key, value in vars(cls).items():
        if key in ("__dict__", "__weakref__"):
            continue
        if type(value) is types.FunctionType:
            value = _rebound(value, namespace)
        elif type(value) is staticmethod or type(value) is classmethod:
            function: Any = value.__func__
            value = type(value)(_rebound(function, namespace))
        body[key] = value
    return type(cls.__name__, cls.__bases__, body)
