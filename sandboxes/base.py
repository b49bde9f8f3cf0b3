"""The sandbox interface: what every backend (bwrap, docker) offers the graders.

A sandbox runs one command over a fresh, private work dir with the given
limits, and hands back what it observed from *outside* the sandboxed process:
exit status, which limit (if any) was hit, capped stdout/stderr, wall and CPU
time, and the files the caller asked to collect from the work dir.

Graders that need to drive a long-lived process (the kernel harness times
batches of calls it is told to make) use ``start()``: the returned
``SandboxProcess`` exposes a command pipe into the sandbox and a reply pipe out
of it (one-way socket pairs: ``channel_pipe``), seen inside as file descriptors
``CHANNEL_IN_FD`` and ``CHANNEL_OUT_FD``.
Everything read from the reply pipe is hostile data: the submission shares the
process that writes it. A request may also ask for an *arena* (shared memory
the grader writes inputs into, seen inside as ``ARENA_FD``; see ``arena.py``),
and a started process can be frozen and thawed as a whole from outside.

No Django here: this package is imported on sandbox hosts that hold no
database credentials.
"""

from __future__ import annotations

import dataclasses
import socket
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .arena import Arena

# Inside the sandbox: the harness reads commands on fd 3 and writes replies on fd 4.
CHANNEL_IN_FD = 3
CHANNEL_OUT_FD = 4
# Inside the sandbox: the arena, when the request asks for one.
ARENA_FD = 5

LimitName = Literal["wall_time", "cpu_time", "memory", "output", "file_size", "processes"]
# "none": no network at all, only Unix sockets. "loopback": the run's own loopback
# interface in a network namespace of its own (nothing outside the run is reachable),
# for code that talks to itself over TCP, such as torch.distributed's gloo backend.
Network = Literal["none", "loopback"]
NETWORKS: tuple[Network, ...] = ("none", "loopback")

MiB = 1024 * 1024
GiB = 1024 * MiB


def channel_pipe() -> tuple[int, int]:
    """A one-way channel, (read end, write end), both close-on-exec: two connected Unix
    stream sockets, each shut in the direction it does not carry, so they behave as a
    pipe does. Sockets, not a pipe: a pipe's end can be opened again through
    ``/proc/self/fd/N`` under a new number, a socket's cannot (``ENXIO``), so a
    channel descriptor a seccomp filter refuses to some code stays out of its reach
    (the re-profile runner's program thread: ``graders/profiling/profile_runner``)."""
    reader, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader.shutdown(socket.SHUT_WR)
    writer.shutdown(socket.SHUT_RD)
    return reader.detach(), writer.detach()


def python_env(workdir: str, *, threads: int = 1, tmpdir: str = "/tmp") -> dict[str, str]:  # noqa: S108
    """The environment every sandboxed Python process starts from: this interpreter's
    tools on PATH, home and caches in the work dir, the sandbox's private tmp, and
    BLAS/OpenMP pinned to ``threads``. Graders add what their runner needs."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "XDG_CACHE_HOME": f"{workdir}/.cache",
    }


class SandboxError(Exception):
    """The sandbox itself failed (not the code inside it): an internal error."""


class SandboxUnavailable(SandboxError):
    """The backend cannot run on this host (e.g. bwrap missing). Never fall back to
    running code unsandboxed."""


class InvalidLimits(ValueError):
    """A per-task limit override names an unknown limit or an out-of-range value."""


@dataclass(frozen=True)
class Limits:
    """Per-run resource limits. Defaults suit a CPU kernel grading; tasks override."""

    wall_time_s: float = 120.0
    cpu_time_s: float = 240.0
    memory_bytes: int = 6 * GiB
    max_processes: int = 64
    file_size_bytes: int = 64 * MiB
    open_files: int = 256
    output_bytes: int = 256 * 1024  # kept per stream (stdout, stderr); the rest is dropped
    workdir_bytes: int = 256 * MiB  # size of the tmpfs work dir
    shm_bytes: int = 64 * MiB

    # The widest a task may ask for; an override past these is refused.
    MAXIMA = {
        "wall_time_s": 1800.0,
        "cpu_time_s": 3600.0,
        "memory_bytes": 64 * GiB,
        "max_processes": 1024,
        "file_size_bytes": 4 * GiB,
        "open_files": 4096,
        "output_bytes": 16 * MiB,
        "workdir_bytes": 8 * GiB,
        "shm_bytes": 8 * GiB,
    }

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> Limits:
        """A copy with per-task overrides applied; unknown names or bad values raise."""
        if not overrides:
            return self
        known = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for name, value in overrides.items():
            if name not in known:
                raise InvalidLimits(f"unknown limit {name!r}; known: {', '.join(sorted(known))}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidLimits(f"limit {name!r} must be a number, got {value!r}")
            if value <= 0 or value > self.MAXIMA[name]:
                raise InvalidLimits(f"limit {name!r}={value} is outside (0, {self.MAXIMA[name]}]")
            changes[name] = type(getattr(self, name))(value)
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class RunRequest:
    """One sandboxed command.

    ``files`` are written into the work dir (mounted at ``workdir`` inside)
    before the command starts. ``ro_binds`` are extra host paths made visible
    read-only (host path, path inside), e.g. the harness source. ``env`` is the
    *entire* environment inside. ``collect`` names work-dir files to read back
    after the run (missing ones are simply absent from the result). ``network``
    is one of ``NETWORKS``.
    """

    argv: Sequence[str]
    limits: Limits = field(default_factory=Limits)
    files: Mapping[str, bytes] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    ro_binds: Sequence[tuple[str, str]] = ()
    collect: Sequence[str] = ()
    stdin: bytes = b""
    workdir: str = "/work"
    gpus: Sequence[int] = ()  # device indices; empty means no GPU inside
    arena_bytes: int = 0
    network: Network = "none"

    def __post_init__(self) -> None:
        if self.network not in NETWORKS:
            raise ValueError(f"unknown network {self.network!r}; known: {', '.join(NETWORKS)}")


@dataclass
class RunResult:
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    wall_time_s: float
    cpu_time_s: float
    limit_exceeded: LimitName | None
    files: dict[str, bytes] = field(default_factory=dict)
    # The memory cgroup reached its limit at some point (the kernel had to reclaim or
    # kill), whether or not that is what ended the run.
    memory_limit_hit: bool = False
    # The most memory the run held at once, read from its cgroup (None where unknown).
    memory_peak_bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.limit_exceeded is None


class SandboxProcess(ABC):
    """A running sandboxed command driven over its channel pipes."""

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Write to the command pipe (fd CHANNEL_IN_FD inside)."""

    @abstractmethod
    def recv(self, timeout_s: float) -> bytes | None:
        """Read what is available on the reply pipe (fd CHANNEL_OUT_FD inside),
        waiting at most ``timeout_s``; ``b""`` at end of file, ``None`` on timeout."""

    @abstractmethod
    def host_pids(self) -> list[int]:
        """Host PIDs of every process inside the sandbox, read from outside."""

    @abstractmethod
    def thread_count(self) -> int:
        """Threads of all processes inside the sandbox, read from outside (/proc)."""

    @abstractmethod
    def cpu_time_s(self) -> float:
        """CPU time used so far by everything inside, read from outside. Exact while
        the run is frozen (nothing inside is between two accounting updates)."""

    @abstractmethod
    def freeze(self) -> None:
        """Stop every process inside at once (FreezeTimeout if they do not all stop)."""

    @abstractmethod
    def thaw(self) -> None:
        """Let the processes inside run again."""

    @property
    @abstractmethod
    def arena(self) -> Arena | None:
        """The run's arena, if the request asked for one."""

    @abstractmethod
    def finish(self, timeout_s: float | None = None) -> RunResult:
        """Close the command pipe, wait for exit (killing the whole tree past the
        timeout or the wall limit), clean up, and report."""

    @abstractmethod
    def kill(self) -> None:
        """Kill everything inside now."""


class Sandbox(ABC):
    """A sandbox backend."""

    name: str
    # Whether what runs inside has a PID namespace of its own, where the kernel numbers
    # only its own threads and processes (a profile runner counts them; see
    # graders.profiling.profile_runner.watch).
    own_pid_namespace: bool = True

    @abstractmethod
    def check(self) -> None:
        """Raise SandboxUnavailable with a clear message if this host cannot run it."""

    @abstractmethod
    def start(self, request: RunRequest) -> SandboxProcess:
        """Start the command; the caller drives it and must call ``finish()``."""

    def run(self, request: RunRequest) -> RunResult:
        """Run to completion without using the channel."""
        process = self.start(request)
        return process.finish()
