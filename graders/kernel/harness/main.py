"""The harness process: serves the trusted grader's commands over fds 3 and 4.

Started inside the sandbox (see ``graders.kernel.grading`` for the command line).
It imports torch, captures the functions it relies on, reports ``hello``,
and only then, on ``load``, imports the problem module: the reference in one
sandbox, the submission in another. Commands (``op``): load, setup, generate
(reference only), call, audit, check (reference only), profile, profile_ops
(a trace summary for reviewers, after the verdict), bye. Each
reply echoes the command's ``seq``.

A ``call`` runs the problem once on inputs the grader has just written into
the arena and answers with where the output is; the grader reads it from
outside before it writes the next call's inputs. ``audit`` ends a batch of
calls: it reports the in-process checks and lets go of the batch's outputs.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from . import arena, audit, outputs, protocol, runner
from .protocol import HARNESS_VERSION, ProtocolError

CHANNEL_IN_FD = 3
CHANNEL_OUT_FD = 4

_write = os.write
_readv = os.readv
_thread_time = time.thread_time
_exit = os._exit  # captured before the submission is imported: it cannot be replaced


def _read_into(view: memoryview) -> bool:
    done = 0
    while done < view.nbytes:
        got = _readv(CHANNEL_IN_FD, [view[done:]])
        if got == 0:
            return False
        done += got
    return True


def read_message() -> tuple[dict[str, Any], list[memoryview], float] | None:
    """One command, and this thread's CPU time when it began to arrive (waking up to
    read it is not counted as the harness's bookkeeping: any loop pays for that);
    None at end of file."""
    prefix = bytearray(12)
    if not _read_into(memoryview(prefix)):
        return None
    began = _thread_time()
    total = protocol.frame_length(prefix)
    frame = bytearray(total)
    frame[:4] = prefix[8:]
    if not _read_into(memoryview(frame)[4:]):
        return None
    header, blobs = protocol.decode_frame(memoryview(frame), trusted=True)
    return header, blobs, began


def send(header: dict[str, Any], blobs: list[memoryview] | None = None) -> None:
    parts = protocol.encode_frame(header, blobs or [])
    if not blobs:  # a call's reply: one write
        parts = [b"".join(parts)]
    for part in parts:
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
        self.arena = arena.ArenaMap()
        self.kept: list[Any] = []  # this batch's outputs, alive until the grader has read them
        self.staged: list[tuple[torch.Tensor, torch.Tensor]] = []  # (arena region, device copy)
        self.last_args: Any = None
        self.last_tree: Any = None
        self.audit = audit.Audit([sys.modules[name] for name in _harness_modules()])
        self.began = 0.0  # this thread's CPU time when the current command arrived
        # Bookkeeping after the last report (building, encoding and writing its reply),
        # added to the next one.
        self.reported_at = 0.0
        self.unreported = 0.0

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
        self.audit.after_import()
        # Everything alive now goes to the permanent generation: later collections, on
        # both sides alike, only look at what calls allocate.
        gc.collect()
        gc.freeze()
        return {"has_check": self.problem.has_check, "violations": self.audit.violations()}

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
        return {"payload": tree, "violations": self.audit.violations()}, out

    def generate(
        self, header: dict[str, Any], _blobs: list[memoryview]
    ) -> tuple[dict[str, Any], list[memoryview]]:
        out: list[memoryview] = []
        values = [
            protocol.pack_tree(self._problem().generate(int(seed), self.seed_inputs), out)
            for seed in header["seeds"]
        ]
        return {"values": values}, out

    def call(self, header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        args = self._args(header["args"])
        call_began = _thread_time()
        try:
            output, inside_s, event_s = runner.call_once(
                self._problem(), args, self.timer, bool(header.get("events"))
            )
        except BaseException as exc:  # SystemExit and friends are the submission's too
            raise runner.HarnessFailure("call", exc) from None
        call_cpu = _thread_time() - call_began
        hooks = self.audit.quick()  # first: a hook left running could otherwise run first
        for region, device_copy in self.staged:
            region.copy_(device_copy)  # device guard bands and inputs back, for the grader
        reply: dict[str, Any] = {"time": inside_s, "event_time": event_s}
        if hooks:
            # Describing the output could run the hook: leave it untouched.
            reply["violations"] = hooks
            return reply
        reply["out"] = outputs.describe(output, self.kept)
        reply["arena"] = list(self.arena.address_range())
        reply["keep"] = self._bookkeeping(call_cpu)
        return reply

    def audit_batch(self, header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        """Lets a batch's outputs go and reports the checks: after a batch (inside the
        measured time) the quick ones, which name a hook left behind; with ``full``
        (after loading, after setup, after the timed batches) all of them."""
        self.kept = []
        violations = self.audit.violations() if header.get("full") else self.audit.quick()
        return {"violations": violations, "keep": self._bookkeeping(0.0)}

    def _bookkeeping(self, call_cpu: float) -> float:
        """This thread's CPU time for the current command, less the call's: reading and
        decoding the command, the checks, describing the output, and (as it comes after
        this report) building, encoding and writing the previous reply. On the
        reference's side it bounds what a submission could save by replacing this loop
        with a leaner one (see ``graders.kernel.timing``)."""
        now = _thread_time()
        spent = max(0.0, now - self.began - call_cpu) + self.unreported
        self.reported_at, self.unreported = now, 0.0
        return spent

    def profile(self, header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        calls = max(1, int(header.get("calls", 1)))
        return {
            "device_time_s": runner.profile_device_time(
                self._problem(), self.last_args, self.timer, calls
            )
        }

    def profile_ops(self, header: dict[str, Any], _blobs: list[memoryview]) -> dict[str, Any]:
        """A trace summary of a few more calls of the last inputs, after the verdict."""
        if self.last_args is None:
            raise ProtocolError("no call to profile yet")
        calls = min(max(1, int(header.get("calls", 1))), 100)
        top = min(max(1, int(header.get("top", 15))), 50)
        self.kept = []
        try:
            summary = runner.profile_operators(
                self._problem(), self.last_args, self.timer, calls, top
            )
        except BaseException as exc:
            raise runner.HarnessFailure("profile", exc) from None
        return {"summary": summary}

    def check(self, header: dict[str, Any], blobs: list[memoryview]) -> dict[str, Any]:
        problem = self._problem()
        results = []
        for data_tree, output_tree in zip(header["inputs"], header["outputs"], strict=True):
            data = protocol.unpack_tree(data_tree, blobs, self._to_device)
            output = protocol.unpack_tree(output_tree, blobs, self._to_device)
            results.append(list(problem.check(data, output)))
        return {"results": results}

    # -- plumbing ---------------------------------------------------------------

    def _problem(self) -> runner.Problem:
        if self.problem is None:
            raise ProtocolError("no problem loaded")
        return self.problem

    def _args(self, tree: Any) -> Any:
        """The call's arguments: the views of the arena the last call had when the
        layout is the same and they are as they were made, else new ones. (Every
        call's per-call work is kept small: it is measured on both sides.)"""
        if (
            self.device == "cpu"
            and tree == self.last_tree
            and self.arena.intact(_tensors(self.last_args))
        ):
            return self.last_args
        self.staged = []
        self.last_args = protocol.unpack_tree(tree, [], arena=self._arena_tensor)
        self.last_tree = tree
        return self.last_args

    def _arena_tensor(
        self, dtype: torch.dtype, shape: list[int], offset: int, pad: int
    ) -> torch.Tensor:
        if self.device == "cpu":
            return self.arena.tensor(dtype, shape, offset)
        # On a GPU the input and its guard bands go to the device for the call, and
        # come back over the arena afterwards.
        item = torch.empty((), dtype=dtype).element_size()
        numel = 1
        for dim in shape:
            numel *= dim
        region = self.arena.region(offset - pad * item, (numel + 2 * pad) * item)
        device_copy = region.to(self.device)
        self.staged.append((region, device_copy))
        return device_copy[pad * item : (pad + numel) * item].view(dtype).view(shape)

    def _to_device(self, dtype: torch.dtype, shape: list[int], data: memoryview) -> torch.Tensor:
        return protocol.copy_tensor(dtype, shape, data).to(self.device)

    def serve(self) -> None:
        handlers = {
            "load": self.load,
            "setup": self.setup,
            "generate": self.generate,
            "call": self.call,
            "audit": self.audit_batch,
            "profile": self.profile,
            "profile_ops": self.profile_ops,
            "check": self.check,
        }
        while True:
            message = read_message()
            if message is None:
                return
            header, blobs, self.began = message
            op = header.get("op")
            if op == "bye":
                return
            reply: Any = self._dispatch(handlers.get(str(op)), header, blobs)
            reply_header, reply_blobs = reply if isinstance(reply, tuple) else (reply, [])
            ok = "error" not in reply_header
            send({"op": op, "seq": header.get("seq"), "ok": ok, **reply_header}, reply_blobs)
            if self.reported_at >= self.began:  # this command's reply carried a report
                self.unreported = _thread_time() - self.reported_at

    def _dispatch(self, handler: Any, header: dict[str, Any], blobs: list[memoryview]) -> Any:
        if handler is None:
            return {
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
            return {"error": failure.details}
        except BaseException as exc:
            return {"error": runner.describe(exc, str(header.get("op")))}


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [tensor for item in value for tensor in _tensors(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in _tensors(item)]
    return []


def _harness_modules() -> list[str]:
    package = __name__.rpartition(".")[0]
    names = ("protocol", "audit", "arena", "outputs", "runner", "main")
    return [f"{package}.{name}" for name in names]


def _warm_up_torch(threads: int) -> None:
    """Fix thread counts and create torch's lazily started pools before the baseline."""
    torch.set_num_threads(threads)
    with contextlib.suppress(RuntimeError):  # already set: nothing to pin
        torch.set_num_interop_threads(1)
    a = torch.randn(256, 256)
    (a @ a).relu_().sum().item()
    # tqdm (torch.compile shows progress with it) starts a monitor thread on its first
    # bar, which would count as a thread the solution left running.
    with contextlib.suppress(ImportError):
        import tqdm

        tqdm.tqdm.monitor_interval = 0


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
            "threads": audit.thread_count(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cuda": torch.cuda.is_available(),
        }
    )
    # Always leave through os._exit, whatever serve() raises: interpreter teardown would
    # run exit callbacks and finalizers a submission registered (and they may hang).
    status = 0
    try:
        with contextlib.suppress(BrokenPipeError):  # the grader went away
            harness.serve()
    except BaseException:
        status = 1
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
        _exit(status)
