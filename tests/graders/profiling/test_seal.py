"""``profile_runner.seal``: the runner's code on a namespace the program cannot rebind.

The runner loads it inside the sandbox as a top-level package; here it is loaded from
its file the same way, on a small module written like the runner's own."""

from __future__ import annotations

import importlib.util
import tempfile
import types
from pathlib import Path
from typing import Any

SEAL = Path(__file__).resolve().parents[3] / "graders/profiling/profile_runner/seal.py"

SOURCE = """
TABLE = {"read": 1}
FOUND = []


def lookup(name):
    return TABLE.get(name)


def helper():
    return "helper"


def calls_helper():
    return helper()


def handed_out():
    return "open"


class Keeper:
    def __init__(self):
        self.where = "start"

    def check(self):
        return lookup("read"), calls_helper()
"""


def _seal_module() -> Any:
    spec = importlib.util.spec_from_file_location("seal_under_test", SEAL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module() -> types.ModuleType:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runner_like.py"
        path.write_text(SOURCE)
        spec = importlib.util.spec_from_file_location("runner_like", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def test_sealed_functions_look_their_names_up_in_a_namespace_of_their_own():
    module = _module()
    sealed = _seal_module().sealed(module)
    assert sealed["lookup"].__globals__ is sealed
    assert sealed["lookup"].__code__ is module.lookup.__code__  # the same code, recognised
    # The program rebinds the module's names and empties its table: the sealed code
    # sees what was there when it was sealed.
    module.helper = lambda: "the program's"
    module.TABLE.clear()
    module.TABLE = {"read": 99}
    assert sealed["calls_helper"]() == "helper"
    assert sealed["lookup"]("read") == 1


def test_a_class_is_made_again_so_that_what_is_set_on_the_modules_class_is_not_on_it():
    module = _module()
    sealed = _seal_module().sealed(module)
    module.Keeper.where = property(lambda self: "the program's")
    module.Keeper.check = lambda self: ("the program's",)
    keeper = sealed["Keeper"]()
    assert keeper.where == "start"
    assert keeper.check() == (1, "helper")
    assert sealed["Keeper"] is not module.Keeper


def test_shared_containers_and_open_functions_stay_the_modules_own():
    module = _module()
    rebuilt: list[str] = []
    sealed = _seal_module().sealed(
        module,
        shared=("FOUND",),
        left_open=("handed_out",),
        rebuild=lambda namespace: rebuilt.append(namespace["__name__"]),
    )
    assert sealed["FOUND"] is module.FOUND  # a list the module's open functions append to
    assert sealed["TABLE"] is not module.TABLE and sealed["TABLE"] == {"read": 1}
    assert sealed["handed_out"] is module.handed_out  # its globals are the program's to see
    assert rebuilt == ["runner_like"]


def test_a_sealed_function_keeps_the_builtins_of_when_it_was_sealed():
    import builtins

    module = _module()
    sealed = _seal_module().sealed(module)
    keeper = sealed["Keeper"]()
    original = builtins.len
    builtins.len = lambda value: -1  # the program rebinds a builtin
    try:
        assert sealed["__builtins__"]["len"] is original
        assert keeper.check() == (1, "helper")
        assert sealed["lookup"].__builtins__["len"] is original
    finally:
        builtins.len = original
