"""The harness process: serves the trusted grader's commands over fds 3 and 4.

Started inside the sandbox (see ``sandboxes.kernel`` for the command line).
It imports torch, captures the functions it relies on, reports ``hello``,
and only then, on ``load``, imports the problem module: the reference in one
sandbox, the submission in another. Commands (``op``): load, setup, generate
(reference only), prepare, go, outputs, profile, check (reference only), bye.
Each reply echoes the command's ``seq``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from pathlib import Path
from typing import Any

import torch

from . import guards, protocol, runner
from .protocol import HARNESS_VERSION, ProtocolError

CHANNEL_IN_FD = 3
CHANNEL_OUT_FD = 4

_write = os.write


def _read_into(view: memoryview) -> bool:
    done = 0
    while done < view.nbytes:
        got = os.readv(CHANNEL_IN_FD, [view[done:]])
        if got == 0:
            return False
        done += got
    return True


def read_message() -> tuple[dict[str, Any], list[memoryview]] | None:
    """One command; None at end of file."""
    prefix = bytearray(12)
    if not _read_into(memoryview(prefix)):
        return None
    total = protocol.frame_length(prefix)
    frame = bytearray(total)
    frame[:4] = prefix[8:]
    if not _read_into(memoryview(frame)[4:]):
        return None
    return protocol.decode_frame(memoryview(frame))


def send(header: dict[str, Any], blobs: list[memoryview] | None = None) -> None:
    for part in protocol.encode_frame(header, blobs or []):
        view = memoryview(part).cast("B")
        while view:
            written = _write(CHANNEL_OUT_FD, view)
            view = view[written:]


class Harness:
    def __init__(self) -> None:
        self.device = "cpu"
        self.problem: runner.Problem | None = None
        self.seed_inputs = True
        self.timer = runner.Timer("cpu")
        self.stager: runner.Stager | None = None
        self.batch: list[Any] = []
        self.outputs: list[Any] = []
        self.guard_ranges: list[tuple[int, int]] = []
        self.samples: list[Any] = []
        self.sentinel = guards.Sentinel([sys.modules[name] for name in _harness_modules()])

    # -- commands ---------------------------------------------------------------

    def load(self, header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        self.device = str(header.get("device", "cpu"))
        self.seed_inputs = bool(header.get("seed_inputs", True))
        self.timer = runner.Timer(self.device)
        runner.seed_everything(int(header["process_seed"]))
        workdir = Path.cwd()
        sys.path.insert(0, str(workdir))
        try:
            module = runner.import_file(workdir / str(header["entry"]))
        except BaseException as exc:
            raise runner.HarnessFailure("import", exc) from None
        self.problem = runner.Problem(
            module, str(header["format"]), str(header["role"]), self.device
        )
        return {"has_check": self.problem.has_check, "violations": self.sentinel.violations()}

    def setup(
        self, header: dict[str, Any], blobs: list[memoryview]
    ) -> tuple[dict[str, Any], list[memoryview]]:
        init = (
            protocol.unpack_tree(header["init"], blobs, self._to_device)
            if "init" in header
            else None
        )
        payload = self._problem().setup(dict(header["params"]), int(header["init_seed"]), init)
        out: list[memoryview] = []
        tree = protocol.pack_tree(payload, out)
        return {"payload": tree, "violations": self.sentinel.violations()}, out

    def generate(
        self, header: dict[str, Any], _blobs: list[memoryview]
    ) -> tuple[dict[str, Any], list[memoryview]]:
        out: list[memoryview] = []
        values = [
            protocol.pack_tree(self._problem().generate(int(seed), self.seed_inputs), out)
            for seed in header["seeds"]
        ]
        return {"values": values}, out

    def prepare(self, header: dict[str, Any], blobs: list[memoryview]) -> dict[str, Any]:
        self.batch, self.outputs = [], []
        self.stager = runner.Stager(
            self.device, keep_pristine=self._problem().format == "kernelbench"
        )
        guards_per_call = []
        for tree in header["values"]:
            start = len(self.stager.guards)
            self.batch.append(protocol.unpack_tree(tree, blobs, self.stager))
            guards_per_call.append((start, len(self.stager.guards)))
        self.guard_ranges = guards_per_call
        self.timer.sync()
        return {"count": len(self.batch)}

    def go(self, header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        result = runner.run_batch(
            self._problem(),
            self.batch,
            self.timer,
            int(header["nonce"]),
            bool(header.get("events")),
        )
        self.outputs = result.pop("outputs")
        self.samples = result.pop("samples")
        return result

    def outputs_(
        self, _header: dict[str, Any], _blobs: list[memoryview]
    ) -> tuple[dict[str, Any], list[memoryview]]:
        out: list[memoryview] = []
        values, samples, margins, unchanged, aliased, views = [], [], [], [], [], []
        stager = self.stager or runner.Stager(self.device, keep_pristine=False)
        seen: set[int] = set()
        for index, output in enumerate(self.outputs):
            first, last = self.guard_ranges[index]
            inputs = stager.guards[first:last]
            storages = runner.storage_pointers(output)
            aliased.append(bool(storages & seen))
            views.append(bool(storages & {g.buffer.untyped_storage().data_ptr() for g in inputs}))
            seen |= storages
            values.append(protocol.pack_tree(output, out))
            samples.append(protocol.pack_tree(self.samples[index], out))
            margins.append(all(g.margins_intact() for g in inputs))
            unchanged.append(all(g.unchanged() for g in inputs))
        reply = {
            "values": values,
            "samples": samples,
            "margins": margins,
            "unchanged": unchanged,
            "aliased": aliased,
            "views_of_inputs": views,
            "violations": self.sentinel.violations(),
        }
        return reply, out

    def profile(self, _header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        return {
            "device_time_s": runner.profile_device_time(self._problem(), self.batch, self.timer)
        }

    def check(self, header: dict[str, Any], blobs: list[memoryview]) -> dict[str, Any]:
        problem = self._problem()
        results = []
        for data_tree, output_tree in zip(header["inputs"], header["outputs"], strict=True):
            data = protocol.unpack_tree(data_tree, blobs, self._to_device)
            output = protocol.unpack_tree(output_tree, blobs, self._to_device)
            results.append(list(problem.check(data, output)))
        return {"results": results}

    def release(self) -> None:
        self.batch, self.outputs, self.samples, self.stager = [], [], [], None

    # -- plumbing ---------------------------------------------------------------

    def _problem(self) -> runner.Problem:
        if self.problem is None:
            raise ProtocolError("no problem loaded")
        return self.problem

    def _to_device(self, dtype: torch.dtype, shape: list[int], data: memoryview) -> torch.Tensor:
        return protocol.copy_tensor(dtype, shape, data).to(self.device)

    def serve(self) -> None:
        handlers = {
            "load": self.load,
            "setup": self.setup,
            "generate": self.generate,
            "prepare": self.prepare,
            "go": self.go,
            "outputs": self.outputs_,
            "profile": self.profile,
            "check": self.check,
        }
        while True:
            message = read_message()
            if message is None:
                return
            header, blobs = message
            op = header.get("op")
            if op == "bye":
                return
            reply: Any = self._dispatch(handlers.get(str(op)), header, blobs)
            reply_header, reply_blobs = reply if isinstance(reply, tuple) else (reply, [])
            if op == "outputs":
                self.release()
            send({"op": op, "seq": header.get("seq"), "ok": True, **reply_header}, reply_blobs)

    def _dispatch(self, handler: Any, header: dict[str, Any], blobs: list[memoryview]) -> Any:
        if handler is None:
            return {
                "ok": False,
                "error": {
                    "where": "protocol",
                    "type": "ProtocolError",
                    "message": f"unknown op {header.get('op')!r}",
                    "traceback": "",
                },
            }
        try:
            return handler(header, blobs)
        except runner.HarnessFailure as failure:
            return {"ok": False, "error": failure.details}
        except BaseException as exc:
            return {"ok": False, "error": runner.describe(exc, str(header.get("op")))}


def _harness_modules() -> list[str]:
    package = __name__.rpartition(".")[0]
    return [f"{package}.{name}" for name in ("protocol", "guards", "runner", "main")]


def _warm_up_torch(threads: int) -> None:
    """Fix thread counts and create torch's lazily started pools before the baseline."""
    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set: nothing to pin
        torch.set_num_interop_threads(1)
    a = torch.randn(256, 256)
    (a @ a).relu_().sum().item()


def main() -> None:
    sys.dont_write_bytecode = True
    _warm_up_torch(max(1, int(os.environ.get("BENCHWRIGHT_THREADS", "1"))))
    harness = Harness()
    send(
        {
            "op": "hello",
            "seq": 0,
            "ok": True,
            "version": HARNESS_VERSION,
            "pid": os.getpid(),
            "threads": guards.thread_count(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cuda": torch.cuda.is_available(),
        }
    )
    with contextlib.suppress(BrokenPipeError):  # the grader went away
        harness.serve()
    # Skip interpreter teardown: submission objects may hang or print in finalisers.
    try:
        sys.stdout.flush()
    finally:
        os._exit(0)
