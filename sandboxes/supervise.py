"""What both backends do around a sandboxed command: start it, watch it, end it.

A ``SupervisedProcess`` spawns the backend's launcher command, then one loop
(in a thread for ``start()``, in the caller's thread for ``run()``) waits on a
pidfd and the output pipes at once: it keeps the first ``output_bytes`` of
stdout and stderr and drops the rest (so the child never blocks on a full
pipe), feeds stdin without blocking, kills the run at its wall-time deadline,
and every ``POLL_INTERVAL_S`` asks the backend's cgroup whether the memory,
task or total CPU-time limit was hit. Exit is seen the moment it happens
(pidfd), not at the next poll.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import subprocess
import threading
import time
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from .arena import Arena
from .base import LimitName, RunRequest, RunResult, SandboxError, SandboxProcess
from .cgroups import RunCgroup

POLL_INTERVAL_S = 0.05
# After the command exits, how long its output may take to drain before the rest is killed.
DRAIN_GRACE_S = 2.0


@dataclass
class RunFds:
    """The descriptors of one run. Child ends are numbered 10 or above so the launcher's
    redirections to fds 3 and 4 never clobber them."""

    parent_in: int = -1  # the grader writes commands here
    parent_out: int = -1  # the grader reads replies here
    child_in: int = -1
    child_out: int = -1
    stdout_r: int = -1
    stdout_w: int = -1
    stderr_r: int = -1
    stderr_w: int = -1
    stdin_r: int = -1
    stdin_w: int = -1
    status_r: int = -1
    status_w: int = -1
    seccomp: int = -1
    arena: int = -1  # the launcher's copy of the arena, moved to ARENA_FD inside

    def passed(self) -> list[int]:
        """Descriptors the launcher inherits besides stdio."""
        fds = (self.child_in, self.child_out, self.status_w, self.seccomp, self.arena)
        return [fd for fd in fds if fd >= 0]

    def close_child_ends(self) -> None:
        for name in ("child_in", "child_out", "stdout_w", "stderr_w", "stdin_r", "status_w"):
            self.close(name)
        self.close("seccomp")
        self.close("arena")

    def close_all(self) -> None:
        for name in self.__dataclass_fields__:
            self.close(name)

    def close(self, name: str) -> None:
        fd = getattr(self, name)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(self, name, -1)

    def open_stdio(self, with_stdin: bool) -> None:
        self.stdout_r, self.stdout_w = os.pipe2(os.O_CLOEXEC)
        self.stderr_r, self.stderr_w = os.pipe2(os.O_CLOEXEC)
        if with_stdin:
            self.stdin_r, self.stdin_w = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(self.stdin_w, False)


def renumber_high(fd: int) -> int:
    """``fd`` moved to a number of at least 10 (close-on-exec; pass_fds clears that)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class OutputStream:
    """Keeps the first ``cap`` bytes of a stream and counts what it drops."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = max(0, self.cap - len(self.data))
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)


class SupervisedProcess(SandboxProcess):
    """A started run; subclasses say how to find its cgroup, kill it and report it."""

    def __init__(
        self,
        request: RunRequest,
        fds: RunFds,
        argv: list[str],
        *,
        supervise_in_thread: bool,
        launcher_env: Mapping[str, str] | None = None,
        arena: Arena | None = None,
    ) -> None:
        self._request = request
        self._arena = arena
        self._fds = fds
        self._limits = request.limits
        self._stdout = OutputStream(request.limits.output_bytes)
        self._stderr = OutputStream(request.limits.output_bytes)
        self._kill_lock = threading.Lock()
        self._kill_reason: LimitName | None = None
        self._killed = False
        self._result: RunResult | None = None
        self._stdin_left = memoryview(request.stdin)
        self._supervisor_error: BaseException | None = None
        self._started = time.monotonic()
        self._deadline = self._started + request.limits.wall_time_s
        self._ended: float | None = None
        self._popen = subprocess.Popen(
            argv,
            stdin=fds.stdin_r if fds.stdin_r >= 0 else subprocess.DEVNULL,
            stdout=fds.stdout_w,
            stderr=fds.stderr_w,
            pass_fds=fds.passed(),
            env=dict(launcher_env or {}),
            cwd="/",
            start_new_session=True,
        )
        try:
            self._pidfd = os.pidfd_open(self._popen.pid)
        except OSError:
            self._popen.kill()
            self._popen.wait()
            raise
        fds.close_child_ends()
        self._supervisor: threading.Thread | None = None
        if supervise_in_thread:
            self._supervisor = threading.Thread(
                target=self._supervise, name=f"sandbox-supervisor-{self._popen.pid}", daemon=True
            )
            self._supervisor.start()

    # --- what a backend provides -------------------------------------------------------

    @abstractmethod
    def _cgroup(self) -> RunCgroup | None:
        """The run's cgroup, or None while it is not known yet."""

    @abstractmethod
    def _backend_kill(self) -> None:
        """Anything beyond SIGKILL to the launcher and the cgroup's members."""

    @abstractmethod
    def _make_result(self) -> RunResult:
        """The report, built after the run has ended and before its resources go."""

    @abstractmethod
    def _release(self) -> None:
        """Free the run's resources (cgroups, work dir, descriptors)."""

    # --- channel -----------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Write to fd 3 inside. Blocks while the pipe is full (at most until the wall-time
        kill); BrokenPipeError once nothing inside can read it any more."""
        view = memoryview(data)
        while view:
            written = os.write(self._fds.parent_in, view)
            view = view[written:]

    def recv(self, timeout_s: float) -> bytes | None:
        fd = self._fds.parent_out
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            if not sel.select(max(0.0, timeout_s)):
                return None
        return os.read(fd, 1 << 16)

    # --- witnesses ---------------------------------------------------------------------

    def thread_count(self) -> int:
        total = 0
        for pid in self.host_pids():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += len(os.listdir(f"/proc/{pid}/task"))
        return total

    def cpu_time_s(self) -> float:
        cgroup = self._cgroup()
        return cgroup.cpu_time_s() if cgroup is not None else 0.0

    # --- freezing and the arena --------------------------------------------------------

    def freeze(self) -> None:
        cgroup = self._cgroup()
        if cgroup is None:
            raise SandboxError("the run's cgroup is not known yet: it cannot be frozen")
        # Killed while freezing (its wall time ran out): the kill thaws the cgroup, and
        # what is inside has SIGKILL pending, so it is as stopped as frozen; the next
        # request finds it gone and the run's result says which limit it hit.
        cgroup.freeze(unless=lambda: self._killed)

    def thaw(self) -> None:
        cgroup = self._cgroup()
        if cgroup is not None:
            cgroup.thaw()

    @property
    def arena(self) -> Arena | None:
        return self._arena

    # --- ending ------------------------------------------------------------------------

    def kill(self) -> None:
        self._kill(None)

    def finish(self, timeout_s: float | None = None) -> RunResult:
        if self._result is not None:
            return self._result
        try:
            self._fds.close("parent_in")
            with contextlib.suppress(OSError):
                self.thaw()  # a frozen run could neither exit nor be killed
            self._wait_supervised(timeout_s)
            self._popen.wait()
            cgroup = self._cgroup()
            if cgroup is not None:
                cgroup.kill()
            if self._supervisor_error is not None:
                raise SandboxError(f"supervising the run failed: {self._supervisor_error!r}")
            self._result = self._make_result()
        finally:
            with self._kill_lock:
                # Under the lock: a late kill() must never signal a reused descriptor.
                with contextlib.suppress(OSError):
                    os.close(self._pidfd)
                self._pidfd = -1
            self._release()
        return self._result

    def _wait_supervised(self, timeout_s: float | None) -> None:
        """Until the run has ended and its output is drained; past ``timeout_s`` it is
        killed and counted as over its wall time."""
        if self._supervisor is None:
            if timeout_s is not None:
                self._deadline = min(self._deadline, time.monotonic() + timeout_s)
            self._supervise()
            return
        self._supervisor.join(timeout_s)
        if self._supervisor.is_alive():
            self._kill("wall_time")
            self._supervisor.join()

    def _kill(self, reason: LimitName | None) -> None:
        with self._kill_lock:
            if self._pidfd < 0:
                return  # finished and released
            if self._kill_reason is None and not self._killed:
                self._kill_reason = reason
            self._killed = True
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        cgroup = self._cgroup()
        if cgroup is not None:
            for pid in cgroup.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            # A frozen process keeps a pending SIGKILL until it is thawed.
            with contextlib.suppress(OSError):
                cgroup.thaw()
        self._backend_kill()

    # --- the loop ----------------------------------------------------------------------

    def _supervise(self) -> None:
        fds = self._fds
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(self._pidfd, selectors.EVENT_READ, "exit")
                sel.register(fds.stdout_r, selectors.EVENT_READ, self._stdout)
                sel.register(fds.stderr_r, selectors.EVENT_READ, self._stderr)
                if fds.stdin_w >= 0:
                    sel.register(fds.stdin_w, selectors.EVENT_WRITE, "stdin")
                self._supervise_loop(sel)
        except BaseException as exc:
            # Never leave a run unsupervised: kill it and let finish() report the fault.
            self._supervisor_error = exc
            self._kill(None)
        for name in ("stdout_r", "stderr_r", "stdin_w"):
            fds.close(name)

    def _supervise_loop(self, sel: selectors.BaseSelector) -> None:
        next_check = self._started + POLL_INTERVAL_S
        drain_until: float | None = None
        drain_kills = 0
        while drain_until is None or any(k.data != "exit" for k in sel.get_map().values()):
            wake = min(next_check, self._deadline) if drain_until is None else drain_until
            for key, _ in sel.select(max(0.0, wake - time.monotonic())):
                if key.data == "exit":
                    sel.unregister(key.fileobj)
                    self._ended = time.monotonic()
                    drain_until = self._ended + DRAIN_GRACE_S
                elif key.data == "stdin":
                    self._feed_stdin(sel, key.fd)
                else:
                    self._drain(sel, key.fd, key.data)
            now = time.monotonic()
            if drain_until is None:
                if now >= self._deadline:
                    self._kill("wall_time")
                elif now >= next_check:
                    self._check_limits()
                    next_check = now + POLL_INTERVAL_S
            elif now >= drain_until:
                # Something still holds the output pipes: kill it, then stop waiting.
                if drain_kills:
                    return
                self._kill(None)
                drain_kills += 1
                drain_until = now + DRAIN_GRACE_S

    def _drain(self, sel: selectors.BaseSelector, fd: int, stream: OutputStream) -> None:
        chunk = os.read(fd, 1 << 16)
        if chunk:
            stream.feed(chunk)
        else:
            sel.unregister(fd)

    def _feed_stdin(self, sel: selectors.BaseSelector, fd: int) -> None:
        try:
            written = os.write(fd, self._stdin_left[: 1 << 16])
            self._stdin_left = self._stdin_left[written:]
        except BlockingIOError:
            return
        except OSError:
            self._stdin_left = memoryview(b"")
        if not self._stdin_left:
            sel.unregister(fd)
            self._fds.close("stdin_w")

    def _check_limits(self) -> None:
        cgroup = self._cgroup()
        if cgroup is None:
            return
        if cgroup.memory_exceeded():
            self._kill("memory")
        elif cgroup.tasks_exceeded():
            self._kill("processes")
        elif cgroup.cpu_time_s() >= self._limits.cpu_time_s:
            self._kill("cpu_time")

    # --- helpers for reports -----------------------------------------------------------

    def _base_result(
        self,
        *,
        exit_code: int | None,
        sig: int | None,
        cpu_time_s: float,
        limit_exceeded: LimitName | None,
        files: dict[str, bytes],
    ) -> RunResult:
        ended = self._ended if self._ended is not None else time.monotonic()
        cgroup = self._cgroup()
        return RunResult(
            memory_limit_hit=cgroup.memory_limit_hit() if cgroup is not None else False,
            memory_peak_bytes=cgroup.memory_peak_bytes() if cgroup is not None else None,
            exit_code=exit_code,
            signal=sig,
            stdout=bytes(self._stdout.data),
            stderr=bytes(self._stderr.data),
            stdout_truncated=self._stdout.dropped > 0,
            stderr_truncated=self._stderr.dropped > 0,
            wall_time_s=ended - self._started,
            cpu_time_s=cpu_time_s,
            limit_exceeded=limit_exceeded,
            files=files,
        )

    def _common_limit_hit(
        self, sig: int | None, cpu_s: float, largest_file: int, file_limit: int
    ) -> LimitName | None:
        """The limit that ended or marred the run, most telling first: an OOM kill
        decides even when a deadline fired too (a run at its memory limit crawls)."""
        cgroup = self._cgroup()
        if cgroup is not None and cgroup.memory_exceeded():
            return "memory"
        if self._kill_reason is not None:
            return self._kill_reason
        if cgroup is not None and cgroup.tasks_exceeded():
            return "processes"
        if sig == signal.SIGXCPU or cpu_s >= self._limits.cpu_time_s:
            return "cpu_time"
        if sig == signal.SIGXFSZ or largest_file >= file_limit:
            return "file_size"
        if self._stdout.dropped or self._stderr.dropped:
            return "output"
        return None

    def _stderr_tail(self) -> str:
        return bytes(self._stderr.data[-2000:]).decode(errors="replace").strip()


def split_exit_code(code: int) -> tuple[int | None, int | None]:
    """(exit_code, signal) from a launcher's code, where death by signal N reads 128+N."""
    if 128 < code <= 128 + 64:
        return None, code - 128
    return code, None
