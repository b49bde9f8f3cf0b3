"""The trusted end of one harness process: framed requests with deadlines, and
what the grader does to the process from outside.

Every reply is read with a size cap and a deadline, checked for the right
``op`` and ``seq``, and decoded without unpickling. A watchdog kills the
sandbox if a request outlives its deadline, so a process that stops reading
its command pipe cannot hang the grader. ``elapsed_s`` of a reply is the
trusted wall time from just before the command was sent to the moment the
whole reply had arrived.

From outside, the grader also freezes and thaws the whole sandbox, reads its
CPU time (exact while frozen), writes each call's inputs into its arena and
reads them back, and reads each call's output out of the harness process's
memory (the harness's host PID is taken at ``hello``, before any code but
the harness's own has run in the sandbox).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from sandboxes import procstat
from sandboxes.base import RunRequest, RunResult, Sandbox, SandboxError, SandboxProcess
from sandboxes.procstat import ProcessGone

from .harness.protocol import ProtocolError, decode_frame, encode_frame, frame_length
from .inputs import ArenaInputs
from .outputs import OutputInfo, changed_since_read, read_output

MiB = 1024 * 1024
DEFAULT_REPLY_CAP = 64 * MiB
TEXT_CAP = 6000


class SideFailure(Exception):
    """A harness process did not answer as it should.

    ``kind``: ``gone`` (it exited or closed its channel), ``timeout``,
    ``protocol`` (a malformed or out-of-order reply), ``too_large`` (a reply over
    its cap) or ``error``
    (it answered with an exception raised by the problem code, in ``error``).
    """

    def __init__(
        self, role: str, kind: str, message: str, error: dict[str, str] | None = None
    ) -> None:
        super().__init__(f"{role}: {message}")
        self.role = role
        self.kind = kind
        self.message = message
        self.error = error or {}


@dataclass
class Reply:
    header: dict[str, Any]
    blobs: list[memoryview]
    elapsed_s: float
    size: int = 0  # the frame's bytes, as the cap counted them


def clean_text(value: Any, cap: int = TEXT_CAP) -> str:
    """A hostile value made into a bounded, printable string."""
    text = value if isinstance(value, str) else repr(value)
    text = "".join(ch if ch.isprintable() or ch in "\n\t" else "?" for ch in text[: cap * 2])
    return text if len(text) <= cap else text[: cap // 2] + "\n…\n" + text[-cap // 2 :]


def clean_error(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {"where": "?", "type": "?", "message": clean_text(value), "traceback": ""}
    return {
        key: clean_text(value.get(key, ""), cap)
        for key, cap in (
            ("where", 40),
            ("type", 200),
            ("message", TEXT_CAP),
            ("traceback", TEXT_CAP),
        )
    }


class Side:
    def __init__(self, role: str, process: SandboxProcess) -> None:
        self.role = role
        self.process = process
        self.buffer = bytearray()
        self.seq = 0
        self.busy_s = 0.0
        # Every second the grader spent blocked on this process (sending it commands
        # and waiting for its replies, including waits that ended in a timeout or a
        # kill). Believed for the trusted processes only: whose time a wall limit
        # went to (``_Grading._blame_wall_time``).
        self.waited_s = 0.0
        self.killed_by_watchdog = False
        self.result: RunResult | None = None
        self.pid = 0  # the harness process, on the host
        self.last_frame_bytes = 0
        self.frozen = False
        self.inputs = ArenaInputs(process.arena) if process.arena is not None else None

    @classmethod
    def start(cls, role: str, backend: Sandbox, request: RunRequest) -> Side:
        return cls(role, backend.start(request))

    # -- requests ---------------------------------------------------------------

    def send_command(
        self, op: str, header: dict[str, Any] | None = None, blobs: list[Any] | None = None
    ) -> None:
        self.seq += 1
        parts = encode_frame({**(header or {}), "op": op, "seq": self.seq}, blobs or [])
        # The header and small blobs go as one write; large blobs as they are, uncopied.
        small = b"".join(bytes(part) for part in parts[:2])
        started = time.perf_counter()
        try:
            for part in [small, *parts[2:]]:
                self.process.send(part)
        except (OSError, ValueError) as exc:
            if self.killed_by_watchdog:  # it stopped reading its commands: a hang
                raise SideFailure(self.role, "timeout", f"it took no {op} command in time") from exc
            raise SideFailure(self.role, "gone", f"its command pipe is closed ({exc})") from exc
        finally:
            self.waited_s += time.perf_counter() - started

    def await_reply(self, op: str, timeout_s: float, max_bytes: int = DEFAULT_REPLY_CAP) -> Reply:
        started = time.perf_counter()
        try:
            header, blobs = self._read_message(time.monotonic() + timeout_s, max_bytes, op)
        finally:
            self.waited_s += time.perf_counter() - started
        if header.get("op") != op or header.get("seq") != self.seq:
            raise SideFailure(
                self.role, "protocol", f"reply out of order (expected {op} #{self.seq})"
            )
        if header.get("ok") is not True:
            error = clean_error(header.get("error"))
            raise SideFailure(self.role, "error", error["message"], error)
        return Reply(header, blobs, time.perf_counter() - started)

    def request(
        self,
        op: str,
        header: dict[str, Any] | None = None,
        blobs: list[Any] | None = None,
        *,
        timeout_s: float,
        max_bytes: int = DEFAULT_REPLY_CAP,
    ) -> Reply:
        """Send one command and wait for its reply; the watchdog covers a blocked send."""
        watchdog = threading.Timer(timeout_s + 2.0, self._expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            started = time.perf_counter()
            self.send_command(op, header, blobs)
            reply = self.await_reply(op, timeout_s, max_bytes)
            reply.elapsed_s = time.perf_counter() - started
            reply.size = self.last_frame_bytes
        finally:
            watchdog.cancel()
        self.busy_s += reply.elapsed_s
        return reply

    def _expire(self) -> None:
        self.killed_by_watchdog = True
        self.kill()

    def _read_message(
        self, deadline: float, max_bytes: int, op: str
    ) -> tuple[dict[str, Any], list[memoryview]]:
        total: int | None = None
        while True:
            if total is None and len(self.buffer) >= 12:
                try:
                    total = frame_length(self.buffer)
                except ProtocolError as exc:
                    raise SideFailure(self.role, "protocol", str(exc)) from exc
                if total > max_bytes:
                    message = f"reply of {total} bytes is over the {max_bytes} cap"
                    raise SideFailure(self.role, "too_large", message)
            if total is not None and len(self.buffer) >= 8 + total:
                self.last_frame_bytes = total
                return self._split(8 + total)
            self._receive(deadline, op)

    def _receive(self, deadline: float, op: str) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self.killed_by_watchdog:
            self.kill()
            raise SideFailure(self.role, "timeout", f"no reply to {op} in time")
        try:
            chunk = self.process.recv(min(remaining, 1.0))
        except (OSError, ValueError) as exc:
            raise SideFailure(self.role, "gone", f"its reply pipe failed ({exc})") from exc
        if chunk == b"":
            if self.killed_by_watchdog:
                raise SideFailure(self.role, "timeout", f"no reply to {op} in time")
            raise SideFailure(self.role, "gone", f"it ended before answering {op}")
        if chunk:
            self.buffer += chunk

    def _split(self, needed: int) -> tuple[dict[str, Any], list[memoryview]]:
        if len(self.buffer) == needed:
            frame, self.buffer = self.buffer, bytearray()
        else:
            frame = self.buffer[:needed]
            del self.buffer[:needed]
        try:
            return decode_frame(memoryview(frame)[8:])
        except ProtocolError as exc:
            raise SideFailure(self.role, "protocol", str(exc)) from exc

    # -- the process ------------------------------------------------------------

    def kill(self) -> None:
        with contextlib.suppress(OSError, SandboxError):
            self.process.kill()

    def finish(self, timeout_s: float = 10.0) -> RunResult:
        """Tell the harness to stop, wait, and collect what the sandbox saw."""
        if self.result is None:
            if self.frozen:
                with contextlib.suppress(SandboxError, OSError):
                    self.thaw()
            with contextlib.suppress(SideFailure):
                self.send_command("bye")
            self.result = self.process.finish(timeout_s)
        return self.result

    def outside_counts(self) -> tuple[int, int]:
        """(processes, threads) inside the sandbox, read from outside."""
        return len(self.process.host_pids()), self.process.thread_count()

    # -- from outside -----------------------------------------------------------

    def find_harness(self, reported_pid: Any) -> None:
        """Take the harness's host PID: the process inside whose own PID is the one its
        hello reported. Nothing but the harness has run in the sandbox yet."""
        for pid in self.process.host_pids():
            if procstat.namespace_pid(pid) == reported_pid or pid == reported_pid:
                self.pid = pid
                return
        raise SandboxError(f"the {self.role} harness (pid {reported_pid!r}) is not in its sandbox")

    def freeze(self) -> None:
        self.process.freeze()
        self.frozen = True

    def thaw(self) -> None:
        self.process.thaw()
        self.frozen = False

    def cpu_s(self) -> float:
        return self.process.cpu_time_s()

    def thread_cpu(self) -> dict[tuple[int, int], float]:
        return procstat.cpu_by_thread(self.process.host_pids())

    def output_changed(self, info: OutputInfo) -> bool:
        """Whether an output read earlier no longer holds what was read."""
        try:
            return changed_since_read(info, self.pid)
        except ProcessGone:
            message = "it ended before its outputs were checked"
            raise SideFailure(self.role, "gone", message) from None

    def read_output(self, tree: Any, cap_bytes: int) -> tuple[Any, OutputInfo]:
        try:
            return read_output(tree, self.pid, cap_bytes)
        except ProcessGone:
            # Ended (or killed by a limit) between its reply and the read: that is
            # the process going away, not a false description of its output.
            raise SideFailure(self.role, "gone", "it ended before its output was read") from None
