"""The bubblewrap backend: Linux namespaces, cgroups, rlimits and seccomp.

How one run is put together
---------------------------
``start()`` creates the run's cgroups (memory, pids, CPU accounting, the
freezer; see ``cgroups.py``) and mounts its size-capped tmpfs on the host (see
``workdir.py`` for why the host mounts it rather than bwrap), writes the input
files, then spawns::

    bash ─exec─► setpriv ─exec─► bwrap ─► bwrap's init (PID 1) ─► env -u PWD ─exec─► argv

The launcher is a few lines of bash, because ``subprocess`` cannot do these
things without ``preexec_fn`` (unsafe in a threaded grader, and it turns the
cheap ``vfork`` into a ``fork``): while still root it writes its own PID into
the run's ``cgroup.procs`` files, so every process of the run is born inside
the cgroups; it moves the channel pipes to fds 3 and 4 (``CHANNEL_IN_FD``,
``CHANNEL_OUT_FD``) and the arena, when the request asks for one, to fd 5
(``ARENA_FD``; see ``arena.py``); it sets the rlimits, which every process
inherits. Then
``setpriv`` drops to an unprivileged host uid/gid used for nothing else
(``DEFAULT_HOST_ID``) and bwrap runs as that user, unprivileged. ``env -u PWD``
is there because bwrap always sets ``PWD``; without it the environment inside
would not be exactly ``RunRequest.env``.

Why not run bwrap as root: root's bwrap maps the sandbox user (65534 inside)
to host uid 0. Without capabilities that still passes every owner check on
root's files, and bwrap leaves ``/proc/sys`` writable when the directory
itself is not: code inside could write ``/proc/sys/kernel/core_pattern`` (a
command the kernel runs as root). As a dedicated unprivileged uid it owns
nothing on the host but its work dir. Read-only sources that uid cannot reach
(an interpreter under ``/root``) are staged by root with a read-only bind (see
``workdir.stage_for``).

bwrap is given ``--unshare-all --unshare-user`` (PID, IPC, UTS, network,
user, cgroup namespaces), uid/gid 65534 inside, ``--die-with-parent`` (if the
grader dies, so does the sandbox), ``--new-session``, ``--cap-drop ALL``,
``--disable-userns``, ``--clearenv`` plus the request's variables, read-only
binds of ``/usr``, the ``/bin``-style links, a few files of ``/etc`` and the
Python environment (the venv and the interpreter's install prefix, never a
home directory), ``--proc``, ``--dev``, a sized tmpfs on ``/dev/shm``, the run's
tmpfs on the work dir and on ``/tmp``, then ``--remount-ro /dev`` and
``--remount-ro /`` (left writable, bwrap's root tmpfs would be uncapped
memory). Mounts are emitted parent before child (a bind under ``/tmp`` after
``/tmp`` itself). The seccomp filter of ``seccomp.py`` arrives as a memfd on
``--seccomp``; bwrap reports the child's exit on ``--json-status-fd``.
The network namespace holds only its loopback interface, which bwrap brings
up; whether code may create sockets for it is the filter's to say (a
``network="loopback"`` run may, see ``seccomp.NETWORK_FAMILIES``). Host
listeners, on 127.0.0.1 included, live in another namespace and are unreachable.

Limits and how a hit is seen from outside
-----------------------------------------
- wall time: the supervisor (``supervise.py``: a thread for ``start()``, the
  calling thread for ``run()``) kills the run at the deadline (SIGKILL to bwrap
  through a pidfd, and to every member of the cgroup; the PID namespace dies
  with bwrap) → ``wall_time``.
- CPU time: ``RLIMIT_CPU`` (SIGXCPU, then SIGKILL a second later) per
  process, and the supervisor kills the run when the cgroup's total CPU time
  reaches the limit, so forking does not multiply it → ``cpu_time``.
- memory: the memory cgroup for the tree (OOM kills counted by the kernel) →
  ``memory``; and ``RLIMIT_AS`` per process at twice the memory limit (at
  least the limit plus 2 GiB). Equal values would make allocations fail on
  address space, which nothing outside the process can observe, long before
  the cgroup is reached, since address space always exceeds resident memory.
  With GPUs there is no ``RLIMIT_AS`` (CUDA reserves huge address ranges).
- processes: ``pids.max`` (counts threads too; bwrap's own two processes are
  added on top of ``max_processes``); the supervisor kills the run on the first
  refused fork → ``processes``. ``RLIMIT_NPROC`` is not used: it counts every
  process of the host uid, so all concurrent runs would share it.
- file size: ``RLIMIT_FSIZE`` (whole KiB). A non-Python writer dies of SIGXFSZ;
  Python ignores that signal and gets EFBIG, so a file in the tmpfs that reached
  the limit also counts → ``file_size``. (``/dev/shm`` is not scanned.)
- open files: ``RLIMIT_NOFILE``.
- output: each of stdout and stderr keeps its first ``output_bytes``; the rest
  is read and dropped so the child never blocks → ``output``.

The exit status comes from bwrap, which reports death by signal N as exit
code 128+N; such codes are returned as ``signal=N`` with ``exit_code=None``
(so code inside should exit with codes below 128).

Caveats for callers: bwrap's ``--die-with-parent`` follows the *thread* that
called ``start()``; keep that thread alive until ``finish()``. The grader must
run as root (tmpfs mounts, cgroups, the uid switch); ``check()`` says so
otherwise, and also when unprivileged user namespaces are not allowed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import cgroups, seccomp
from .arena import Arena
from .base import (
    ARENA_FD,
    CHANNEL_IN_FD,
    CHANNEL_OUT_FD,
    NETWORKS,
    GiB,
    Limits,
    RunRequest,
    RunResult,
    Sandbox,
    SandboxError,
    SandboxUnavailable,
    channel_pipe,
)
from .supervise import RunFds, SupervisedProcess, renumber_high, split_exit_code
from .workdir import TmpfsWorkdir, make_state_dir, relative_path, stage_for, sweep_stale

SANDBOX_UID = 65534
SANDBOX_GID = 65534
# The host uid and gid the sandbox user is: unprivileged and used by nothing else.
DEFAULT_HOST_ID = 2_000_000_000
SETPRIV = "/usr/bin/setpriv"
# bwrap's monitor and its PID-1 init sit in the pids cgroup beside the command.
BWRAP_OWN_TASKS = 2
INSTALL_HINT = "install bubblewrap: apt-get install bubblewrap"

# Bound read-only when present; bwrap would otherwise fail on a missing source.
SYSTEM_RO_BINDS = ("/usr", "/etc/ld.so.cache", "/etc/alternatives", "/etc/passwd", "/etc/group")
MERGED_USR_LINKS = ("/bin", "/lib", "/lib64", "/sbin")
# Paths inside the sandbox's own mount namespace, not the host's shared directories.
INNER_TMP = "/tmp"  # noqa: S108
INNER_SHM = "/dev/shm"  # noqa: S108
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
GPU_OPTIONAL_DEVICES = ("/dev/nvidia-modeset",)

# Runs in bash before bwrap: join the cgroups, move the channel to fds 3/4 and the arena
# (if any) to fd 5, set rlimits.
LAUNCHER = f"""
n=$1; shift
while [ "$n" -gt 0 ]; do
  printf '%d\\n' $$ > "$1" || exit 125
  shift; n=$((n - 1))
done
src_in=$1 src_out=$2 src_arena=$3; shift 3
exec {CHANNEL_IN_FD}<&"$src_in" {CHANNEL_OUT_FD}>&"$src_out" || exit 125
exec {{src_in}}<&- {{src_out}}>&-
if [ "$src_arena" != - ]; then
  exec {ARENA_FD}<&"$src_arena" || exit 125
  exec {{src_arena}}<&-
fi
while [ "$1" != "--" ]; do
  ulimit "$1" "$2" || exit 125
  shift 2
done
shift
exec "$@"
"""


def _depth(path: str) -> int:
    return len(Path(path).parts)


@dataclass
class MountPlan:
    """bwrap mount arguments, emitted parent before child whatever the order they were added."""

    entries: list[tuple[str, list[str]]] = field(default_factory=list)

    def add(self, dest: str, *args: str) -> None:
        self.entries.append((dest, list(args)))

    def args(self) -> list[str]:
        ordered = sorted(enumerate(self.entries), key=lambda item: (_depth(item[1][0]), item[0]))
        return [arg for _, (_, args) in ordered for arg in args]


def _rlimit_args(limits: Limits, *, with_address_space: bool) -> list[str]:
    """``ulimit`` option/value pairs for the launcher. Each sets soft and hard at once,
    except CPU time, whose soft limit is one second below the hard one so that a
    process gets SIGXCPU before SIGKILL."""
    cpu_soft = max(1, math.ceil(limits.cpu_time_s))
    pairs = [
        ("-t", str(cpu_soft + 1)),
        ("-St", str(cpu_soft)),
        ("-f", str(file_size_kib(limits))),
        ("-n", str(limits.open_files)),
    ]
    if with_address_space:
        pairs.append(("-v", str(address_space_bytes(limits) // 1024)))
    return [item for pair in pairs for item in pair]


def file_size_kib(limits: Limits) -> int:
    """RLIMIT_FSIZE as the launcher sets it: whole KiB, at least one."""
    return max(1, limits.file_size_bytes // 1024)


def address_space_bytes(limits: Limits) -> int:
    return max(2 * limits.memory_bytes, limits.memory_bytes + 2 * GiB)


def _python_prefixes() -> list[str]:
    """The running interpreter's venv and install prefix (and their real paths), to be
    bound at the same paths so that ``sys.executable`` works inside; /usr is bound anyway."""
    found: list[str] = []
    for prefix in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        real = os.path.realpath(prefix)
        for path in (prefix, real):
            if path not in found and not path.startswith("/usr/"):
                found.append(path)
    return found


class BwrapSandbox(Sandbox):
    """Runs commands under bubblewrap. See the module docstring for the whole design."""

    name = "bwrap"

    def __init__(
        self,
        *,
        python_prefixes: Sequence[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        host_id: int = DEFAULT_HOST_ID,
    ) -> None:
        """``host_id`` is the host uid and gid the sandbox runs as; it must not be 0."""
        if host_id <= 0:
            raise ValueError("the sandbox must not run as host root")
        self.host_id = host_id
        self.python_prefixes = (
            list(python_prefixes) if python_prefixes is not None else _python_prefixes()
        )
        self.state_dir = Path(state_dir or Path(tempfile.gettempdir()) / "benchwright-sandbox")
        self._probed: str | None = None
        self._staged: dict[str, str] = {}
        self._cgroups: cgroups.CgroupHost | None = None
        self._lock = threading.Lock()

    # --- availability ----------------------------------------------------------------

    def check(self) -> None:
        self._require()

    def _require(self) -> tuple[str, cgroups.CgroupHost]:
        """The bwrap binary and the cgroup host, or SandboxUnavailable saying what is wrong."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable(f"bubblewrap (bwrap) is not on PATH; {INSTALL_HINT}")
        if os.geteuid() != 0:
            raise SandboxUnavailable(
                "the bwrap backend must run as root: it mounts a size-capped tmpfs per run "
                "and creates memory and pids cgroups (without them a limit would be missing)"
            )
        for tool in ("/bin/bash", SETPRIV):
            if not os.access(tool, os.X_OK):
                raise SandboxUnavailable(f"{tool} is needed to launch bwrap and is missing")
        for network in NETWORKS:
            seccomp.filter_bpf(network)
        with self._lock:
            if self._cgroups is None:
                self._cgroups = cgroups.detect()
                self._cgroups.sweep_stale()
                sweep_stale(self.state_dir)
            if self._probed != bwrap:
                _probe_namespaces(bwrap, self.host_id)
                self._probed = bwrap
            return bwrap, self._cgroups

    # --- argv ------------------------------------------------------------------------

    def bwrap_args(
        self,
        request: RunRequest,
        *,
        work_src: str,
        tmp_src: str,
        seccomp_fd: int,
        status_fd: int,
        sources: Mapping[str, str] | None = None,
    ) -> list[str]:
        """bwrap's arguments for ``request`` (everything between ``bwrap`` and ``--``).
        ``sources`` maps a read-only host path to where bwrap should bind it from (a
        staged copy, see ``workdir.stage_for``); paths not in it are bound as they are."""
        args = [
            "--unshare-all",
            "--unshare-user",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_GID),
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--disable-userns",
            "--clearenv",
        ]
        for key, value in request.env.items():
            args += ["--setenv", key, value]
        plan = self._mounts(request, work_src=work_src, tmp_src=tmp_src, sources=sources or {})
        args += plan.args()
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", request.workdir]
        args += ["--seccomp", str(seccomp_fd), "--json-status-fd", str(status_fd)]
        return args

    def _mounts(
        self, request: RunRequest, *, work_src: str, tmp_src: str, sources: Mapping[str, str]
    ) -> MountPlan:
        plan = MountPlan()
        for path in SYSTEM_RO_BINDS:
            plan.add(path, "--ro-bind-try", sources.get(path, path), path)
        for link in MERGED_USR_LINKS:
            if os.path.islink(link):
                plan.add(link, "--symlink", os.readlink(link), link)
            elif os.path.isdir(link):
                plan.add(link, "--ro-bind", link, link)
        for prefix in self.python_prefixes:
            plan.add(prefix, "--ro-bind", sources.get(prefix, prefix), prefix)
        plan.add("/proc", "--proc", "/proc")
        plan.add("/dev", "--dev", "/dev")
        plan.add(INNER_SHM, "--size", str(request.limits.shm_bytes), "--tmpfs", INNER_SHM)
        plan.add(INNER_TMP, "--bind", tmp_src, INNER_TMP)
        plan.add(request.workdir, "--bind", work_src, request.workdir)
        for src, dest in request.ro_binds:
            plan.add(dest, "--ro-bind", sources.get(src, src), dest)
        if request.gpus:
            for index in request.gpus:
                device = f"/dev/nvidia{int(index)}"
                plan.add(device, "--dev-bind", device, device)
            for device in GPU_DEVICES:
                plan.add(device, "--dev-bind", device, device)
            for device in GPU_OPTIONAL_DEVICES:
                plan.add(device, "--dev-bind-try", device, device)
            plan.add("/sys", "--ro-bind", "/sys", "/sys")
        return plan

    def inner_argv(self, request: RunRequest) -> list[str]:
        """What bwrap executes: the request's argv, behind ``env -u PWD`` (bwrap always sets
        PWD) unless the request sets PWD itself."""
        if "PWD" in request.env:
            return list(request.argv)
        return ["/usr/bin/env", "-u", "PWD", "--", *request.argv]

    def launcher_argv(
        self,
        request: RunRequest,
        *,
        bwrap: str,
        join_files: Sequence[str],
        chan_in: int,
        chan_out: int,
        bwrap_args: Sequence[str],
        arena: int = -1,
    ) -> list[str]:
        """The full command line of the launcher (bash), which ends by exec'ing bwrap."""
        rlimits = _rlimit_args(request.limits, with_address_space=not request.gpus)
        return [
            "/bin/bash",
            "--noprofile",
            "--norc",
            "-c",
            LAUNCHER,
            "benchwright-launch",
            str(len(join_files)),
            *join_files,
            str(chan_in),
            str(chan_out),
            str(arena) if arena >= 0 else "-",
            *rlimits,
            "--",
            SETPRIV,
            "--reuid",
            str(self.host_id),
            "--regid",
            str(self.host_id),
            "--clear-groups",
            "--",
            bwrap,
            *bwrap_args,
            "--",
            *self.inner_argv(request),
        ]

    def _stage_sources(self, request: RunRequest) -> dict[str, str]:
        """Read-only sources the sandbox uid cannot reach, mapped to staged binds."""
        wanted = [*SYSTEM_RO_BINDS, *self.python_prefixes, *(src for src, _ in request.ro_binds)]
        sources: dict[str, str] = {}
        with self._lock:
            for path in dict.fromkeys(wanted):
                staged = self._staged.get(path)
                if staged is None or not _same_file(path, staged):
                    if not os.path.exists(path):
                        continue
                    make_state_dir(self.state_dir)
                    staged = stage_for(path, self.state_dir, self.host_id, self.host_id)
                    self._staged[path] = staged
                sources[path] = staged
        return sources

    # --- running ---------------------------------------------------------------------

    def start(self, request: RunRequest) -> BwrapProcess:
        return self._launch(request, supervise_in_thread=True)

    def run(self, request: RunRequest) -> RunResult:
        # Supervised from the calling thread: a supervisor thread costs a few ms per run
        # on a busy host, and nothing else needs this thread meanwhile.
        return self._launch(request, supervise_in_thread=False).finish()

    def _launch(self, request: RunRequest, *, supervise_in_thread: bool) -> BwrapProcess:
        _validate(request)
        bwrap, host = self._require()
        run = _RunResources(self.state_dir, request, self.host_id)
        try:
            sources = self._stage_sources(request)
            run.prepare(host)
            argv = self.launcher_argv(
                request,
                bwrap=bwrap,
                join_files=run.cgroup.join_files,
                chan_in=run.fds.child_in,
                chan_out=run.fds.child_out,
                arena=run.fds.arena,
                bwrap_args=self.bwrap_args(
                    request,
                    work_src=str(run.workdir.work),
                    tmp_src=str(run.workdir.tmp),
                    seccomp_fd=run.fds.seccomp,
                    status_fd=run.fds.status_w,
                    sources=sources,
                ),
            )
            return BwrapProcess(request, run, argv, supervise_in_thread=supervise_in_thread)
        except BaseException:
            run.release()
            raise


def _same_file(a: str, b: str) -> bool:
    """Whether two paths lead to the same file (a staged bind still in place)."""
    try:
        first, second = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _validate(request: RunRequest) -> None:
    if not request.argv:
        raise ValueError("RunRequest.argv is empty")
    if not os.path.isabs(request.workdir) or _depth(request.workdir) < 2:
        raise ValueError(f"workdir must be an absolute path below /: {request.workdir!r}")
    for name in (*request.files, *request.collect):
        relative_path(name)
    for key in request.env:
        if not key or "=" in key or "\0" in key:
            raise ValueError(f"invalid environment variable name {key!r}")
    for _src, dest in request.ro_binds:
        if not os.path.isabs(dest):
            raise ValueError(f"ro_binds destinations must be absolute: {dest!r}")
    for index in request.gpus:
        device = f"/dev/nvidia{int(index)}"
        if not os.path.exists(device):
            raise SandboxUnavailable(f"GPU {index} was requested but {device} does not exist")


def _probe_namespaces(bwrap: str, host_id: int) -> None:
    """Run ``true`` as the sandbox's host uid in the namespaces a real run uses;
    SandboxUnavailable if that fails."""
    argv = [SETPRIV, "--reuid", str(host_id), "--regid", str(host_id), "--clear-groups", "--"]
    argv += [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID)]
    argv += ["--gid", str(SANDBOX_GID), "--disable-userns", "--cap-drop", "ALL"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for link in MERGED_USR_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", "1048576", "--tmpfs", INNER_TMP]
    argv += ["--remount-ro", "/", "--", "/usr/bin/true"]
    try:
        probe = subprocess.run(argv, capture_output=True, timeout=30, check=False, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bwrap could not be run: {exc}") from exc
    if probe.returncode != 0:
        detail = probe.stderr.decode(errors="replace").strip()
        raise SandboxUnavailable(
            "bwrap cannot set up a sandbox here: it needs bubblewrap 0.8 or newer, run by an "
            "unprivileged uid, and user, PID and network namespaces permitted to it (check "
            "user.max_user_namespaces, kernel.unprivileged_userns_clone, AppArmor's "
            f"restrict_unprivileged_userns and any container seccomp policy): {detail}"
        )


# --- one run's resources ------------------------------------------------------------------


class _RunResources:
    """The cgroup, tmpfs and descriptors of one run, and their release."""

    def __init__(self, state_dir: Path, request: RunRequest, host_id: int) -> None:
        self.request = request
        self.name = cgroups.new_cgroup_name()
        self.workdir = TmpfsWorkdir(
            state_dir, self.name, request.limits.workdir_bytes, owner=(host_id, host_id)
        )
        self.fds = RunFds()
        self.arena: Arena | None = None
        self._cgroup: cgroups.RunCgroup | None = None
        self._released = False

    @property
    def cgroup(self) -> cgroups.RunCgroup:
        if self._cgroup is None:
            raise SandboxError("the run's cgroup was not created")
        return self._cgroup

    def prepare(self, host: cgroups.CgroupHost) -> None:
        limits = self.request.limits
        self._cgroup = host.create(
            self.name,
            memory_bytes=limits.memory_bytes,
            max_tasks=limits.max_processes + BWRAP_OWN_TASKS,
        )
        self.workdir.create()
        self.workdir.write_files(self.request.files)
        self._open_pipes()
        if self.request.arena_bytes > 0:
            self.arena = Arena.memfd(self.request.arena_bytes)
            self.fds.arena = renumber_high(os.dup(self.arena.fd))

    def _open_pipes(self) -> None:
        fds = self.fds
        child_in, fds.parent_in = channel_pipe()
        fds.parent_out, child_out = channel_pipe()
        fds.child_in, fds.child_out = renumber_high(child_in), renumber_high(child_out)
        fds.open_stdio(with_stdin=bool(self.request.stdin))
        fds.status_r, status_w = os.pipe2(os.O_CLOEXEC)
        fds.status_w = renumber_high(status_w)
        fds.seccomp = renumber_high(seccomp.filter_fd(self.request.network))

    def release(self) -> None:
        """Kill what is left, unmount the tmpfs, remove the cgroups, close descriptors."""
        if self._released:
            return
        self._released = True
        errors: list[BaseException] = []
        if self._cgroup is not None:
            try:
                self._cgroup.kill()
            except SandboxError as exc:
                errors.append(exc)
        for step in (self.workdir.release, self._remove_cgroup):
            try:
                step()
            except (SandboxError, OSError) as exc:
                errors.append(exc)
        self.fds.close_all()
        if self.arena is not None:
            self.arena.close()
        if errors:
            raise SandboxError(f"cleanup after a run failed: {errors}")

    def _remove_cgroup(self) -> None:
        if self._cgroup is not None:
            self._cgroup.remove()


# --- the running process ------------------------------------------------------------------


class BwrapProcess(SupervisedProcess):
    """A started bwrap run (see ``supervise.py`` for how it is watched)."""

    def __init__(
        self,
        request: RunRequest,
        run: _RunResources,
        argv: list[str],
        *,
        supervise_in_thread: bool = True,
    ) -> None:
        self._run = run
        super().__init__(
            request, run.fds, argv, supervise_in_thread=supervise_in_thread, arena=run.arena
        )

    def _cgroup(self) -> cgroups.RunCgroup:
        return self._run.cgroup

    def _backend_kill(self) -> None:
        """Nothing more: the launcher is bwrap, and its PID namespace dies with it."""

    def _release(self) -> None:
        self._run.release()

    def host_pids(self) -> list[int]:
        """Every process inside the sandbox's PID namespace, its init (PID 1) included:
        code running as the sandbox user can write to init's memory through
        ``/proc/1/mem``, so whatever runs there counts too. Only bwrap's monitor,
        which lives outside the namespace, is left out."""
        monitor = self._popen.pid
        return [pid for pid in self._run.cgroup.pids() if pid != monitor]

    def _make_result(self) -> RunResult:
        status = _read_status(self._run.fds.status_r)
        exit_code, sig = self._exit_status(status)
        cpu = self._run.cgroup.cpu_time_s()
        limit = self._common_limit_hit(
            sig,
            cpu,
            self._run.workdir.largest_file_bytes(),
            file_size_kib(self._limits) * 1024,
        )
        files = self._run.workdir.collect(self._request.collect)
        return self._base_result(
            exit_code=exit_code, sig=sig, cpu_time_s=cpu, limit_exceeded=limit, files=files
        )

    def _exit_status(self, status: dict[str, int]) -> tuple[int | None, int | None]:
        if "exit-code" in status:
            return split_exit_code(status["exit-code"])
        if self._killed:
            return None, signal.SIGKILL
        if "child-pid" not in status:
            raise SandboxError(f"bwrap could not set up the sandbox: {self._stderr_tail()}")
        returncode = self._popen.returncode
        if returncode is not None and returncode < 0:
            return None, -returncode
        return returncode, None


def _read_status(fd: int) -> dict[str, int]:
    """bwrap's --json-status-fd documents, merged (the writer has exited; reads cannot block)."""
    os.set_blocking(fd, False)
    raw = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 1 << 16):
            raw += chunk
    merged: dict[str, int] = {}
    decoder = json.JSONDecoder()
    text, pos = raw.decode(errors="replace"), 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        if isinstance(doc, dict):
            merged.update({k: v for k, v in doc.items() if isinstance(v, int)})
    return merged
