"""The debugging test runner: runs a task's tests one command at a time, inside the
sandbox, over the kernel harness's channel (commands on fd 3, replies on fd 4,
framed by ``harness.protocol``).

It imports torch, reports ``hello``, and then for each ``test`` command seeds
every generator with the grading's secret seed, imports the test file under
its dotted name (the codebase's root is the working directory and first on
``sys.path``), calls the function (with ``seed=`` when it takes one), and
answers with what the test returned, packed as a value tree, or with the
exception it raised, and the test's own output (file descriptors 1 and 2).

Nothing this process says is believed: the code under test shares it. The
grader decides pass or fail outside, by comparing what each test returned with
what the same test returned for the expert fix on the same secret seed, and
from what the sandbox saw (exit, time, memory). This runner is no pytest, sets
no test variables, and a test that raises, skips or exits has simply not
returned.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import inspect
import os
import sys
import tempfile
import traceback
from typing import Any

import torch
from harness import protocol
from harness.main import read_message, send
from harness.runner import describe, seed_everything

OUTPUT_CAP = 8000
ROOT = "/work/repo"
_exit = os._exit


def _plain(value: Any, depth: int = 0) -> Any:
    """NumPy arrays and scalars as tensors and Python numbers; the rest as it is."""
    if depth > protocol.MAX_TREE_DEPTH:
        return value
    module = type(value).__module__
    if module == "numpy":
        if hasattr(value, "shape") and getattr(value, "ndim", 0) > 0:
            return torch.from_numpy(value.copy())
        return value.item()
    if isinstance(value, list | tuple):
        items = [_plain(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    return value


class _Capture:
    """The test's output on fds 1 and 2, into a file, the last ``OUTPUT_CAP`` chars kept."""

    def __enter__(self) -> _Capture:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        self.sink = tempfile.TemporaryFile()
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.sink.fileno(), 1)
        os.dup2(self.sink.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        self.sink.seek(0, os.SEEK_END)
        size = self.sink.tell()
        self.sink.seek(max(0, size - OUTPUT_CAP * 4))
        text = self.sink.read().decode("utf-8", "replace")
        self.sink.close()
        self.text = text[-OUTPUT_CAP:]


def run_test(header: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
    module_name = str(header.get("module"))
    function_name = str(header.get("function"))
    seed = int(header.get("seed", 0))
    blobs: list[memoryview] = []
    reply: dict[str, Any] = {"raised": None, "value": None}
    with _Capture() as capture:
        try:
            seed_everything(seed)
            module = importlib.import_module(module_name)
            function = getattr(module, function_name)
            takes_seed = "seed" in inspect.signature(function).parameters
            value = function(seed=seed) if takes_seed else function()
            reply["value"] = protocol.pack_tree(_plain(value), blobs)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: not a return
            reply["raised"] = describe(exc, "test")
            blobs = []
    reply["output"] = capture.text
    gc.collect()
    return reply, blobs


def main() -> None:
    sys.dont_write_bytecode = True
    torch.set_num_threads(1)
    send({"op": "hello", "seq": 0, "ok": True, "pid": os.getpid()})
    os.chdir(ROOT)
    sys.path.insert(0, ROOT)
    status = 0
    try:
        while True:
            message = read_message()
            if message is None:
                break
            header, _blobs, _began = message
            if header.get("op") != "test":
                break
            reply, blobs = run_test(header)
            send({"op": "test", "seq": header.get("seq"), "ok": True, **reply}, blobs)
    except BaseException:
        status = 1
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        _exit(status)
