"""UNSAFE: runs commands as plain child processes, with no isolation at all.

For development and for ``bench/grading.py``, which measures what the real
sandbox costs by running the same harness without it. It is never returned
by ``sandboxes.get_backend`` and the platform never uses it: hostile code run
here can read the host, reach the network and kill the caller. Constructing
it requires ``allow_unsafe=True``.

Bind mounts are emulated: every ``(host, inside)`` pair of ``ro_binds`` and
the work dir become symlinks in a private temp folder, and the inside paths
are rewritten in ``argv`` and ``env``. Resource limits are rlimits (address
space, CPU, file size, open files) and a wall-clock deadline. Freezing is
SIGSTOP and SIGCONT to every process of the run; CPU time is the sum of their
threads' run times in ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path, PurePosixPath

from . import procstat
from .arena import Arena
from .base import (
    ARENA_FD,
    CHANNEL_IN_FD,
    CHANNEL_OUT_FD,
    LimitName,
    RunRequest,
    RunResult,
    Sandbox,
    SandboxError,
    SandboxProcess,
    channel_pipe,
)

_HIGH_FD = 100


class _CappedReader(threading.Thread):
    def __init__(self, stream: int, cap: int) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def run(self) -> None:
        while chunk := os.read(self.stream, 1 << 16):
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.truncated = True
            self.data += chunk[: max(room, 0)]
        os.close(self.stream)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        with (
            contextlib.suppress(OSError),
            open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle,
        ):
            found.extend(int(child) for child in handle.read().split())
    return found


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # gone
    return state in (b"T", b"t", b"Z", b"X")


class UnsandboxedProcess(SandboxProcess):
    def __init__(self, request: RunRequest) -> None:
        self.request = request
        self.limits = request.limits
        self.root = Path(tempfile.mkdtemp(prefix="bw-unsafe-"))
        self.workdir = self.root / "work"
        self.workdir.mkdir()
        self._write_files()
        self.paths = self._emulate_binds()
        command_r, self.command_w = channel_pipe()
        self.reply_r, reply_w = channel_pipe()
        high_r = os.dup2(command_r, _HIGH_FD, inheritable=False)
        high_w = os.dup2(reply_w, _HIGH_FD + 1, inheritable=False)
        os.close(command_r)
        os.close(reply_w)
        self._arena = Arena.memfd(request.arena_bytes) if request.arena_bytes > 0 else None
        high_arena = os.dup2(self._arena.fd, _HIGH_FD + 2, inheritable=False) if self._arena else -1
        self.started = time.monotonic()
        self.deadline = self.started + self.limits.wall_time_s
        self.popen = subprocess.Popen(
            [self._translate(arg) for arg in request.argv],
            cwd=self.workdir,
            env={key: self._translate(value) for key, value in request.env.items()},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=False,
            start_new_session=True,
            preexec_fn=lambda: self._in_child(high_r, high_w, high_arena),
        )
        os.close(high_r)
        os.close(high_w)
        if high_arena >= 0:
            os.close(high_arena)
        assert self.popen.stdout is not None and self.popen.stderr is not None
        self.out = _CappedReader(os.dup(self.popen.stdout.fileno()), self.limits.output_bytes)
        self.err = _CappedReader(os.dup(self.popen.stderr.fileno()), self.limits.output_bytes)
        self.popen.stdout.close()
        self.popen.stderr.close()
        self.out.start()
        self.err.start()
        self.limit: LimitName | None = None

    def _write_files(self) -> None:
        for name, data in self.request.files.items():
            relative = PurePosixPath(name)
            if relative.is_absolute() or ".." in relative.parts:
                raise SandboxError(f"file path {name!r} leaves the work dir")
            target = self.workdir / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def _emulate_binds(self) -> list[tuple[str, str]]:
        """Inside paths mapped to host paths; a bind's parent folder is mapped too
        when it does not exist on the host (so it can be put on sys.path)."""
        paths = [(self.request.workdir, str(self.workdir))]
        for index, (host, inside) in enumerate(self.request.ro_binds):
            inside_path = PurePosixPath(inside)
            holder = self.root / f"bind{index}"
            holder.mkdir()
            (holder / inside_path.name).symlink_to(host)
            paths.append((inside, str(holder / inside_path.name)))
            if not Path(str(inside_path.parent)).exists():
                paths.append((str(inside_path.parent), str(holder)))
        return sorted(paths, key=lambda pair: -len(pair[0]))

    def _translate(self, value: str) -> str:
        for inside, here in self.paths:
            value = re.sub(
                rf"(?<![\w.-]){re.escape(inside)}(?=/|:|'|\"|$)", here.replace("\\", "\\\\"), value
            )
        return value

    def _in_child(self, command_r: int, reply_w: int, arena: int) -> None:
        limits = self.limits
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        cpu = int(limits.cpu_time_s)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.dup2(command_r, CHANNEL_IN_FD)
        os.dup2(reply_w, CHANNEL_OUT_FD)
        if arena >= 0:
            os.dup2(arena, ARENA_FD)

    # -- SandboxProcess ------------------------------------------------------------

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.command_w, view) :]

    def recv(self, timeout_s: float) -> bytes | None:
        ready, _, _ = select.select([self.reply_r], [], [], max(0.0, timeout_s))
        if not ready:
            return None
        return os.read(self.reply_r, 1 << 20)

    def host_pids(self) -> list[int]:
        if self.popen.poll() is not None:
            return []
        pids, queue = [], [self.popen.pid]
        while queue:
            pid = queue.pop()
            pids.append(pid)
            queue.extend(_children(pid))
        return pids

    def thread_count(self) -> int:
        total = 0
        for pid in self.host_pids():
            with contextlib.suppress(OSError):
                total += len(os.listdir(f"/proc/{pid}/task"))
        return total

    def cpu_time_s(self) -> float:
        return sum(procstat.cpu_by_thread(self.host_pids()).values())

    def freeze(self) -> None:
        # Stop until every process of the tree is seen stopped (a fork may race the signal).
        deadline = time.monotonic() + 5.0
        while True:
            pids = self.host_pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            if all(_stopped(pid) for pid in pids) and pids == self.host_pids():
                return
            if time.monotonic() > deadline:
                raise SandboxError("the unsandboxed process tree did not stop")
            time.sleep(0.0005)

    def thaw(self) -> None:
        for pid in self.host_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    @property
    def arena(self) -> Arena | None:
        return self._arena

    def kill(self) -> None:
        for pid in self.host_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGCONT)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def finish(self, timeout_s: float | None = None) -> RunResult:
        with contextlib.suppress(OSError):
            os.close(self.command_w)
        wait_until = (
            self.deadline if timeout_s is None else min(self.deadline, time.monotonic() + timeout_s)
        )
        try:
            self.popen.wait(timeout=max(0.0, wait_until - time.monotonic()))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= self.deadline - 0.01:
                self.limit = "wall_time"
            self.kill()
            self.popen.wait()
        self.kill()  # daemons left behind in the session
        self.out.join(5)
        self.err.join(5)
        with contextlib.suppress(OSError):
            os.close(self.reply_r)
        if self._arena is not None:
            self._arena.close()
        return self._result()

    def _result(self) -> RunResult:
        code = self.popen.returncode
        sig = -code if code is not None and code < 0 else None
        limit = self.limit
        if limit is None and sig == signal.SIGXCPU:
            limit = "cpu_time"
        elif limit is None and sig == signal.SIGXFSZ:
            limit = "file_size"
        elif limit is None and (self.out.truncated or self.err.truncated):
            limit = "output"
        files = {}
        for name in self.request.collect:
            path = self.workdir / name
            if path.is_file():
                files[name] = path.read_bytes()
        shutil.rmtree(self.root, ignore_errors=True)
        return RunResult(
            exit_code=None if sig else code,
            signal=sig,
            stdout=bytes(self.out.data),
            stderr=bytes(self.err.data),
            stdout_truncated=self.out.truncated,
            stderr_truncated=self.err.truncated,
            wall_time_s=time.monotonic() - self.started,
            cpu_time_s=0.0,
            limit_exceeded=limit,
            files=files,
        )


class Unsandboxed(Sandbox):
    """No isolation whatsoever: development and benchmarks only (see module docstring)."""

    name = "unsandboxed"
    own_pid_namespace = False

    def __init__(self, *, allow_unsafe: bool = False) -> None:
        if allow_unsafe is not True:
            raise ValueError(
                "Unsandboxed runs code with no isolation; pass allow_unsafe=True "
                "(development and benchmarks only, never for the platform)"
            )

    def check(self) -> None:
        return None

    def start(self, request: RunRequest) -> SandboxProcess:
        return UnsandboxedProcess(request)
