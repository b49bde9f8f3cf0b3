"""Per-run control groups: the limits rlimits cannot give, and witnesses from outside.

Each run gets its own cgroup(s), created as children of the cgroups this
process already sits in (read from ``/proc/self/cgroup``), so a grader that is
itself confined stays confined. They provide:

- a memory ceiling for the whole process tree, with OOM kills counted by the
  kernel (``memory.oom_control`` / ``memory.events``);
- a task ceiling (``pids.max``), which holds even where ``RLIMIT_NPROC`` does
  not (bwrap started as root maps the sandbox user to host root, for whom the
  kernel ignores ``RLIMIT_NPROC``); hits are counted in ``pids.events``.
  The pids controller counts threads as well as processes;
- the member list and the CPU time of everything inside, read by the grader
  without trusting the sandboxed code;
- a freezer: the grader stops every process of a run at once while it is not
  that run's turn (``freeze``/``thaw``), so a submission can do nothing while
  the reference is measured, and nothing between its own measured batches.

cgroup v1 (one hierarchy per controller: memory, pids, cpuacct, freezer) and
cgroup v2 (one unified hierarchy with the memory and pids controllers, and its
built-in freezer) are supported.
On v2 a cgroup that holds processes cannot delegate controllers to children,
so when enabling them fails with EBUSY this process moves itself into a leaf
``benchwright-supervisor`` first; if other processes share its cgroup that is
not enough, and the host is reported unusable rather than run without limits.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .base import SandboxError, SandboxUnavailable

NAME_PREFIX = "benchwright-"
V1_CONTROLLERS = ("memory", "pids", "cpuacct", "freezer")
FREEZE_TIMEOUT_S = 5.0
V2_CONTROLLERS = ("memory", "pids")

_counter = itertools.count()
_counter_lock = threading.Lock()


def new_cgroup_name() -> str:
    """A name unique on this host and hard to guess (run directories are named after it);
    it carries the owner's PID so stale ones can be swept."""
    with _counter_lock:
        seq = next(_counter)
    return f"{NAME_PREFIX}{os.getpid()}-{seq}-{os.urandom(8).hex()}"


class FreezeTimeout(SandboxError):
    """The run's processes did not all stop in time."""


def _wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``condition``: a few times at once (freezing usually takes well under a
    millisecond), then with short sleeps until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    spins = 0
    while not condition():
        if time.monotonic() > deadline:
            return False
        spins += 1
        if spins > 20:
            time.sleep(0.0005)
    return True


class RunCgroup(ABC):
    """The cgroup(s) of one run."""

    @property
    @abstractmethod
    def join_files(self) -> tuple[str, ...]:
        """``cgroup.procs`` files a process writes its PID into to join the run."""

    @abstractmethod
    def pids(self) -> list[int]:
        """Host PIDs of every process in the run's cgroup."""

    @abstractmethod
    def cpu_time_s(self) -> float:
        """CPU time (user + system) used so far by everything in the cgroup."""

    @abstractmethod
    def memory_exceeded(self) -> bool:
        """Whether the kernel OOM-killed anything in the cgroup."""

    @abstractmethod
    def memory_limit_hit(self) -> bool:
        """Whether usage ever reached the memory limit (reclaim or OOM), as the kernel
        counts it: a run that slowed to a crawl at its limit before anything was killed
        still shows here."""

    @abstractmethod
    def tasks_exceeded(self) -> bool:
        """Whether a fork or thread creation failed on the task ceiling."""

    @abstractmethod
    def memory_peak_bytes(self) -> int | None:
        """The most memory everything in the cgroup held at once, as the kernel counts
        it (None where the kernel does not keep the figure). Nothing inside the sandbox
        can reset it: the cgroup files are not mounted there."""

    @abstractmethod
    def freeze(
        self, timeout_s: float = FREEZE_TIMEOUT_S, unless: Callable[[], bool] = lambda: False
    ) -> None:
        """Stop every process in the cgroup; FreezeTimeout if they are not all stopped
        within ``timeout_s`` (the cgroup is left freezing: call ``thaw`` or ``kill``).
        ``unless`` ends the wait without an error: the run was killed meanwhile (a kill
        thaws the cgroup so that SIGKILL is delivered, and nothing inside runs again)."""

    @abstractmethod
    def thaw(self) -> None:
        """Let the cgroup's processes run again."""

    @abstractmethod
    def _dirs(self) -> list[Path]:
        """The cgroup directories, one per hierarchy."""

    def kill(self, timeout_s: float = 5.0) -> None:
        """SIGKILL every member until none is left.

        Raises SandboxError if processes survive ``timeout_s``: the caller must
        not report a clean run while something of it still runs.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            members = self.pids()
            if not members:
                return
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            # A frozen process keeps a pending SIGKILL until it is thawed.
            with contextlib.suppress(OSError):
                self.thaw()
            if time.monotonic() > deadline:
                raise SandboxError(f"processes {members} survived SIGKILL in {self._dirs()[0]}")
            time.sleep(0.002)

    def remove(self, timeout_s: float = 5.0) -> None:
        """Kill what is left and remove the cgroup directories."""
        self.kill(timeout_s)
        deadline = time.monotonic() + timeout_s
        for path in self._dirs():
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    # EBUSY while exiting tasks are still being released.
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise SandboxError(f"cannot remove cgroup {path}: {exc}") from exc
                    self.kill(timeout_s)
                    time.sleep(0.002)


class CgroupHost(ABC):
    """Where run cgroups are created on this host."""

    version: int

    @abstractmethod
    def create(self, name: str, *, memory_bytes: int, max_tasks: int) -> RunCgroup:
        """A new run cgroup with its limits written; SandboxUnavailable if they cannot be."""

    @abstractmethod
    def parents(self) -> list[Path]:
        """The directories run cgroups are created in."""

    @abstractmethod
    def open_run(self, name: str) -> RunCgroup:
        """The run cgroup called ``name`` (used to sweep stale ones)."""

    def sweep_stale(self) -> None:
        """Kill and remove run cgroups left behind by processes that no longer exist."""
        names: set[str] = set()
        for parent in self.parents():
            with contextlib.suppress(OSError):
                names.update(p.name for p in parent.iterdir() if p.name.startswith(NAME_PREFIX))
        for name in sorted(names):
            match = re.match(rf"{NAME_PREFIX}(\d+)-", name)
            if match is None or pid_alive(int(match.group(1))):
                continue
            with contextlib.suppress(SandboxError):
                self.open_run(name).remove(timeout_s=1.0)


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (it may be a reused PID)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _read_count(path: Path) -> int | None:
    try:
        return int(_read(path).strip())
    except (FileNotFoundError, ValueError):
        return None


def _keyed(text: str) -> dict[str, int]:
    """``key value`` lines (memory.events, pids.events, cpu.stat) as a dict."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _procs(path: Path) -> list[int]:
    try:
        return [int(line) for line in _read(path / "cgroup.procs").split()]
    except FileNotFoundError:
        return []


# --- cgroup v1 -------------------------------------------------------------------------


@dataclass
class V1RunCgroup(RunCgroup):
    memory: Path
    pids_dir: Path
    cpuacct: Path
    freezer: Path

    @property
    def join_files(self) -> tuple[str, ...]:
        return tuple(str(d / "cgroup.procs") for d in self._dirs())

    def _dirs(self) -> list[Path]:
        # Deduplicated: controllers may share one hierarchy on some hosts.
        return list(dict.fromkeys((self.memory, self.pids_dir, self.cpuacct, self.freezer)))

    def pids(self) -> list[int]:
        return _procs(self.pids_dir)

    def freeze(
        self, timeout_s: float = FREEZE_TIMEOUT_S, unless: Callable[[], bool] = lambda: False
    ) -> None:
        state = self.freezer / "freezer.state"
        _write(state, "FROZEN")
        if not _wait_for(lambda: _read(state).strip() == "FROZEN" or unless(), timeout_s):
            raise FreezeTimeout(f"{self.freezer} did not freeze in {timeout_s} s")

    def thaw(self) -> None:
        _write(self.freezer / "freezer.state", "THAWED")

    def cpu_time_s(self) -> float:
        try:
            return int(_read(self.cpuacct / "cpuacct.usage")) / 1e9
        except FileNotFoundError:
            return 0.0

    def memory_exceeded(self) -> bool:
        try:
            control = _keyed(_read(self.memory / "memory.oom_control"))
        except FileNotFoundError:
            return False
        if "oom_kill" in control:
            return control["oom_kill"] > 0
        # Kernels before 4.13 do not count OOM kills; a hit on the limit is the best sign.
        return int(_read(self.memory / "memory.failcnt")) > 0

    def memory_limit_hit(self) -> bool:
        try:
            return self.memory_exceeded() or int(_read(self.memory / "memory.failcnt")) > 0
        except (FileNotFoundError, ValueError):
            return False

    def tasks_exceeded(self) -> bool:
        try:
            return _keyed(_read(self.pids_dir / "pids.events")).get("max", 0) > 0
        except FileNotFoundError:
            return False

    def memory_peak_bytes(self) -> int | None:
        return _read_count(self.memory / "memory.max_usage_in_bytes")


@dataclass
class V1Host(CgroupHost):
    memory: Path
    pids_dir: Path
    cpuacct: Path
    freezer: Path
    version: int = 1

    def parents(self) -> list[Path]:
        return list(dict.fromkeys((self.memory, self.pids_dir, self.cpuacct, self.freezer)))

    def open_run(self, name: str) -> V1RunCgroup:
        return V1RunCgroup(
            self.memory / name, self.pids_dir / name, self.cpuacct / name, self.freezer / name
        )

    def create(self, name: str, *, memory_bytes: int, max_tasks: int) -> RunCgroup:
        run = self.open_run(name)
        try:
            for path in run._dirs():
                path.mkdir()
            _write(run.memory / "memory.limit_in_bytes", str(memory_bytes))
            memsw = run.memory / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                # Without it the limit could be dodged by swapping.
                _write(memsw, str(memory_bytes))
            _write(run.pids_dir / "pids.max", str(max_tasks))
        except OSError as exc:
            with contextlib.suppress(SandboxError):
                run.remove(timeout_s=1.0)
            raise SandboxUnavailable(f"cannot set up cgroup v1 limits for a run: {exc}") from exc
        return run


# --- cgroup v2 -------------------------------------------------------------------------


@dataclass
class V2RunCgroup(RunCgroup):
    path: Path

    @property
    def join_files(self) -> tuple[str, ...]:
        return (str(self.path / "cgroup.procs"),)

    def _dirs(self) -> list[Path]:
        return [self.path]

    def pids(self) -> list[int]:
        return _procs(self.path)

    def cpu_time_s(self) -> float:
        try:
            return _keyed(_read(self.path / "cpu.stat")).get("usage_usec", 0) / 1e6
        except FileNotFoundError:
            return 0.0

    def memory_exceeded(self) -> bool:
        try:
            events = _keyed(_read(self.path / "memory.events"))
        except FileNotFoundError:
            return False
        return events.get("oom_kill", 0) + events.get("oom_group_kill", 0) > 0

    def memory_limit_hit(self) -> bool:
        try:
            events = _keyed(_read(self.path / "memory.events"))
        except FileNotFoundError:
            return False
        return events.get("max", 0) + events.get("oom", 0) + events.get("oom_kill", 0) > 0

    def tasks_exceeded(self) -> bool:
        try:
            return _keyed(_read(self.path / "pids.events")).get("max", 0) > 0
        except FileNotFoundError:
            return False

    def memory_peak_bytes(self) -> int | None:
        return _read_count(self.path / "memory.peak")  # kernels from 5.19

    def freeze(
        self, timeout_s: float = FREEZE_TIMEOUT_S, unless: Callable[[], bool] = lambda: False
    ) -> None:
        _write(self.path / "cgroup.freeze", "1")
        events = self.path / "cgroup.events"
        if not _wait_for(lambda: _keyed(_read(events)).get("frozen") == 1 or unless(), timeout_s):
            raise FreezeTimeout(f"{self.path} did not freeze in {timeout_s} s")

    def thaw(self) -> None:
        _write(self.path / "cgroup.freeze", "0")

    def kill(self, timeout_s: float = 5.0) -> None:
        # cgroup.kill (Linux 5.14) kills atomically, forks in flight included.
        with contextlib.suppress(OSError):
            _write(self.path / "cgroup.kill", "1")
        super().kill(timeout_s)


@dataclass
class V2Host(CgroupHost):
    parent: Path
    version: int = 2

    def parents(self) -> list[Path]:
        return [self.parent]

    def open_run(self, name: str) -> V2RunCgroup:
        return V2RunCgroup(self.parent / name)

    def create(self, name: str, *, memory_bytes: int, max_tasks: int) -> RunCgroup:
        run = self.open_run(name)
        try:
            run.path.mkdir()
            _write(run.path / "memory.max", str(memory_bytes))
            if (run.path / "memory.swap.max").exists():
                _write(run.path / "memory.swap.max", "0")
            # One OOM kill takes the whole run: a half-killed tree is not worth grading.
            _write(run.path / "memory.oom.group", "1")
            _write(run.path / "pids.max", str(max_tasks))
        except OSError as exc:
            with contextlib.suppress(SandboxError):
                run.remove(timeout_s=1.0)
            raise SandboxUnavailable(f"cannot set up cgroup v2 limits for a run: {exc}") from exc
        return run


# --- discovery -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mount:
    root: str
    mountpoint: str
    fstype: str
    super_options: frozenset[str]


def _mounts() -> list[_Mount]:
    mounts = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        mounts.append(
            _Mount(
                root=_unescape(fields[3]),
                mountpoint=_unescape(fields[4]),
                fstype=tail[0],
                super_options=frozenset(tail[2].split(",")),
            )
        )
    return mounts


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _own_cgroups(pid: int | str = "self") -> dict[str, str]:
    """Controller (or "" for the v2 hierarchy) → the process's cgroup path."""
    own: dict[str, str] = {}
    for line in _read(Path(f"/proc/{pid}/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own


def _under(mount: _Mount, cgroup_path: str) -> Path:
    relative = cgroup_path
    if mount.root != "/" and (cgroup_path + "/").startswith(mount.root.rstrip("/") + "/"):
        relative = cgroup_path[len(mount.root.rstrip("/")) :]
    return Path(mount.mountpoint) / relative.lstrip("/")


def _v1_host(mounts: list[_Mount], own: dict[str, str]) -> V1Host | None:
    dirs: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        mount = next(
            (m for m in mounts if m.fstype == "cgroup" and controller in m.super_options), None
        )
        if mount is None or controller not in own:
            return None
        dirs[controller] = _under(mount, own[controller])
    return V1Host(
        memory=dirs["memory"],
        pids_dir=dirs["pids"],
        cpuacct=dirs["cpuacct"],
        freezer=dirs["freezer"],
    )


def _v2_host(mounts: list[_Mount], own: dict[str, str]) -> V2Host | None:
    mount = next((m for m in mounts if m.fstype == "cgroup2"), None)
    if mount is None or "" not in own:
        return None
    parent = _under(mount, own[""])
    available = set(_read(parent / "cgroup.controllers").split())
    missing = [c for c in V2_CONTROLLERS if c not in available]
    if missing:
        return None
    _enable_v2_controllers(parent)
    return V2Host(parent=parent)


def _enable_v2_controllers(parent: Path) -> None:
    wanted = " ".join(f"+{c}" for c in V2_CONTROLLERS)
    try:
        _write(parent / "cgroup.subtree_control", wanted)
        return
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise SandboxUnavailable(
                f"cannot enable {wanted} in {parent}/cgroup.subtree_control: {exc}"
            ) from exc
    # "No internal processes": move this process into a leaf, then retry.
    leaf = parent / f"{NAME_PREFIX}supervisor"
    leaf.mkdir(exist_ok=True)
    _write(leaf / "cgroup.procs", str(os.getpid()))
    try:
        _write(parent / "cgroup.subtree_control", wanted)
    except OSError as exc:
        raise SandboxUnavailable(
            f"cannot enable {wanted} for children of {parent} (other processes share it?): "
            f"{exc}; run the grader in a cgroup of its own with controllers delegated"
        ) from exc


def of_process(pid: int) -> RunCgroup | None:
    """The cgroup(s) another process sits in (e.g. a container's init), for reading its
    members, CPU time and limit hits; None if they cannot be found from here. Never
    ``remove()`` what this returns: it belongs to whoever created it."""
    try:
        mounts, own = _mounts(), _own_cgroups(pid)
    except (OSError, ValueError):
        return None
    v1 = _v1_host(mounts, own)
    if v1 is not None:
        return V1RunCgroup(v1.memory, v1.pids_dir, v1.cpuacct, v1.freezer)
    mount = next((m for m in mounts if m.fstype == "cgroup2"), None)
    if mount is None or "" not in own:
        return None
    return V2RunCgroup(_under(mount, own[""]))


def detect() -> CgroupHost:
    """The cgroup setup of this host, or SandboxUnavailable saying what is missing."""
    try:
        mounts, own = _mounts(), _own_cgroups()
    except OSError as exc:
        raise SandboxUnavailable(f"cannot read this process's cgroups: {exc}") from exc
    host: CgroupHost | None = _v1_host(mounts, own)
    if host is None:
        try:
            host = _v2_host(mounts, own)
        except OSError as exc:
            raise SandboxUnavailable(f"cgroup v2 is not usable here: {exc}") from exc
    if host is None:
        raise SandboxUnavailable(
            "no usable cgroups: need the memory, pids, cpuacct and freezer controllers (cgroup v1) "
            "or the memory and pids controllers in the unified hierarchy (cgroup v2)"
        )
    for parent in host.parents():
        if not os.access(parent, os.W_OK):
            raise SandboxUnavailable(f"cannot create cgroups under {parent}: not writable")
    return host
