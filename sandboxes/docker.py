"""The Docker backend: the same guarantees as bwrap, from ``docker run`` flags.

For hosts that run graders next to a Docker Engine (with the NVIDIA container
toolkit for GPUs). The image (``BENCHWRIGHT_DOCKER_IMAGE`` or the ``image``
argument) must hold the Python environment, ``/bin/sh`` and ``/usr/bin/env``;
it is never pulled at run time (``--pull never``).

One run is ``docker run`` with ``--network none`` (the container's own
loopback interface only; a ``network="loopback"`` run differs only in the
seccomp profile, which lets it create TCP sockets for it), ``--read-only``,
``--user 65534:65534``, ``--cap-drop ALL``, ``--security-opt
no-new-privileges``, the seccomp policy of ``seccomp.py`` as a profile,
``--init`` (a PID-1 reaper: when the command exits, the PID namespace and every
daemon in it go), ``--memory`` with ``--memory-swap`` equal (no swap),
``--pids-limit``, ``--cpus``, ``--ulimit`` for CPU time, file size and open
files, ``--shm-size``, a sized ``--tmpfs /tmp``, ``--log-driver none`` (so an
output flood never reaches the daemon's disk) and ``--gpus device=N`` for GPUs.
Docker has no address-space ulimit, so ``RLIMIT_AS`` is set by the shim below
(not with GPUs, as for bwrap).

The work dir is the same host-mounted, size-capped tmpfs as for bwrap
(``workdir.py``), owned by the container user and bind-mounted in, so the
grader must run as root on the Docker host itself (not in another container).
The CLI cannot hand extra descriptors to a container, so the channel is two
FIFOs in a read-only bind at ``/run/benchwright``; a shim opens them as fds 3
and 4 (and the arena, a file on a host tmpfs bound at
``/run/benchwright-arena``, as fd 5), then runs the command under ``env -i``
with exactly ``RunRequest.env``. Freezing uses the container's own cgroup.
The grader keeps both FIFOs open read-write, so opening them inside never
blocks; therefore ``send``/``recv`` watch the ``docker run`` process for end of
file and broken pipes instead of relying on the kernel.

Witnesses come from the container's cgroup, found through its init's PID
(``docker inspect``), so they need the grader in the host's PID namespace. A
wall-time kill is ``docker kill``; containers are labelled with the grader's
host and PID, and ``check()`` removes those whose grader is gone.

Not run on the machine this was written on (no Docker Engine there): only the
argument building and ``check()``'s refusal without an engine are tested.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from . import cgroups, seccomp
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
    SandboxUnavailable,
)
from .bwrap import INNER_TMP, address_space_bytes
from .supervise import RunFds, SupervisedProcess, split_exit_code
from .workdir import TmpfsWorkdir, relative_path, sweep_stale

DEFAULT_IMAGE = "benchwright-sandbox:latest"
CONTAINER_UID = 65534
CONTAINER_GID = 65534
CHANNEL_DIR = "/run/benchwright"
ARENA_DIR = "/run/benchwright-arena"
# A host tmpfs for arenas: shared memory, never the host's disk.
HOST_SHM = Path("/dev/shm")  # noqa: S108
LABEL = "benchwright.sandbox"
INSPECT_EVERY_S = 0.25
DOCKER_TIMEOUT_S = 30.0
INSTALL_HINT = "install Docker Engine and start dockerd, or set DOCKER_HOST"

# Inside the container: RLIMIT_AS (docker has no ulimit for it), the channel, then the
# command with exactly the request's environment.
SHIM = f"""
if [ -n "$BENCHWRIGHT_AS_KIB" ]; then ulimit -v "$BENCHWRIGHT_AS_KIB" || exit 125; fi
exec {CHANNEL_IN_FD}<{CHANNEL_DIR}/in {CHANNEL_OUT_FD}>{CHANNEL_DIR}/out || exit 125
if [ -e {ARENA_DIR}/arena ]; then exec {ARENA_FD}<>{ARENA_DIR}/arena || exit 125; fi
exec /usr/bin/env -i -- "$@"
"""


class DockerSandbox(Sandbox):
    """Runs commands in Docker containers. See the module docstring."""

    name = "docker"

    def __init__(
        self,
        *,
        image: str | None = None,
        cpus: float | None = None,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.image = image or os.environ.get("BENCHWRIGHT_DOCKER_IMAGE", DEFAULT_IMAGE)
        self.cpus = cpus if cpus is not None else float(os.cpu_count() or 1)
        self.state_dir = Path(state_dir or Path(tempfile.gettempdir()) / "benchwright-docker")
        self._swept = False

    # --- availability ----------------------------------------------------------------

    def check(self) -> None:
        self._require()

    def _require(self) -> str:
        docker = shutil.which("docker")
        if docker is None:
            raise SandboxUnavailable(f"the docker CLI is not on PATH; {INSTALL_HINT}")
        try:
            probe = _docker(docker, "version", "--format", "{{.Server.Version}}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"the docker CLI could not be run: {exc}") from exc
        if probe.returncode != 0 or not probe.stdout.strip():
            detail = (probe.stderr or probe.stdout).strip()
            raise SandboxUnavailable(f"no Docker engine answers: {detail}; {INSTALL_HINT}")
        if os.geteuid() != 0:
            raise SandboxUnavailable(
                "the docker backend must run as root on the Docker host: it mounts a "
                "size-capped tmpfs per run for the work dir"
            )
        if not self._swept:
            self._sweep(docker)
            sweep_stale(self.state_dir)
            self._swept = True
        return docker

    def _sweep(self, docker: str) -> None:
        """Remove containers of graders on this host that no longer exist."""
        listed = _docker(
            docker, "ps", "-a", "--filter", f"label={LABEL}.host={socket.gethostname()}",
            "--format", f'{{{{.ID}}}} {{{{.Label "{LABEL}.owner"}}}}',
        )  # fmt: skip
        for line in listed.stdout.splitlines():
            container, _, owner = line.partition(" ")
            if owner.isdigit() and not cgroups.pid_alive(int(owner)):
                _docker(docker, "rm", "-f", container)

    # --- argv ------------------------------------------------------------------------

    def run_argv(
        self,
        request: RunRequest,
        *,
        docker: str,
        name: str,
        work_src: str,
        channel_src: str,
        seccomp_profile: str,
        arena_src: str | None = None,
    ) -> list[str]:
        """The full ``docker run`` command line for ``request``."""
        limits = request.limits
        argv = [docker, "run", "--name", name, "--init", "--pull", "never"]
        argv += ["--label", f"{LABEL}.host={socket.gethostname()}"]
        argv += ["--label", f"{LABEL}.owner={os.getpid()}", "--log-driver", "none"]
        if request.stdin:
            argv.append("--interactive")
        argv += ["--network", "none", "--read-only", "--hostname", "sandbox", "--ipc", "private"]
        argv += ["--user", f"{CONTAINER_UID}:{CONTAINER_GID}", "--cap-drop", "ALL"]
        argv += ["--security-opt", "no-new-privileges"]
        argv += ["--security-opt", f"seccomp={seccomp_profile}"]
        argv += ["--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes)]
        # The init (tini) and the shim's shell, which execs the command, share one slot.
        argv += ["--pids-limit", str(limits.max_processes + 1), "--cpus", f"{self.cpus:g}"]
        argv += ["--shm-size", str(limits.shm_bytes)]
        tmp = f"{INNER_TMP}:rw,nosuid,nodev,size={limits.workdir_bytes},mode=1777"
        argv += ["--tmpfs", tmp]
        argv += _ulimits(request)
        argv += ["--mount", f"type=bind,source={work_src},target={request.workdir}"]
        argv += ["--mount", f"type=bind,source={channel_src},target={CHANNEL_DIR},readonly"]
        if arena_src is not None:
            argv += ["--mount", f"type=bind,source={arena_src},target={ARENA_DIR}"]
        for src, dest in request.ro_binds:
            argv += ["--mount", f"type=bind,source={src},target={dest},readonly"]
        argv += ["--workdir", request.workdir]
        if request.gpus:
            argv += ["--gpus", _gpu_request(request.gpus)]
        else:
            as_kib = address_space_bytes(limits) // 1024
            argv += ["--env", f"BENCHWRIGHT_AS_KIB={as_kib}"]
        argv += [self.image, "/bin/sh", "-c", SHIM, "benchwright-shim"]
        argv += [f"{key}={value}" for key, value in request.env.items()]
        return [*argv, *request.argv]

    # --- running ---------------------------------------------------------------------

    def start(self, request: RunRequest) -> DockerProcess:
        return self._launch(request, supervise_in_thread=True)

    def run(self, request: RunRequest) -> RunResult:
        return self._launch(request, supervise_in_thread=False).finish()

    def _launch(self, request: RunRequest, *, supervise_in_thread: bool) -> DockerProcess:
        _validate(request)
        docker = self._require()
        run = _DockerRun(self.state_dir, request)
        try:
            run.prepare()
            argv = self.run_argv(
                request,
                docker=docker,
                name=run.name,
                work_src=str(run.workdir.work),
                channel_src=str(run.channel_dir),
                seccomp_profile=str(run.profile),
                arena_src=str(run.arena_dir) if run.arena is not None else None,
            )
            return DockerProcess(
                request, run, argv, docker=docker, supervise_in_thread=supervise_in_thread
            )
        except BaseException:
            run.release(docker)
            raise


def _ulimits(request: RunRequest) -> list[str]:
    limits = request.limits
    cpu = max(1, int(limits.cpu_time_s + 0.999))
    values = {
        "cpu": f"{cpu}:{cpu + 1}",
        "fsize": f"{limits.file_size_bytes}:{limits.file_size_bytes}",
        "nofile": f"{limits.open_files}:{limits.open_files}",
    }
    return [arg for key, value in values.items() for arg in ("--ulimit", f"{key}={value}")]


def _gpu_request(gpus: Sequence[int]) -> str:
    devices = ",".join(str(int(index)) for index in gpus)
    # The CLI splits the value as CSV: several devices must be quoted inside it.
    return f"device={devices}" if len(gpus) == 1 else f'"device={devices}"'


def _validate(request: RunRequest) -> None:
    if not request.argv:
        raise ValueError("RunRequest.argv is empty")
    if "=" in request.argv[0]:
        raise ValueError(f"argv[0] must not contain '=': {request.argv[0]!r}")
    if not os.path.isabs(request.workdir) or request.workdir == "/":
        raise ValueError(f"workdir must be an absolute path below /: {request.workdir!r}")
    for name in (*request.files, *request.collect):
        relative_path(name)
    for key in request.env:
        if not key or "=" in key or "\0" in key:
            raise ValueError(f"invalid environment variable name {key!r}")


def _cli_env() -> dict[str, str]:
    """What the docker CLI needs from the grader's environment (engine address, config)."""
    return {
        key: value
        for key, value in os.environ.items()
        if key in ("PATH", "HOME") or key.startswith("DOCKER_")
    }


def _docker(docker: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [docker, *args],
        capture_output=True,
        text=True,
        timeout=DOCKER_TIMEOUT_S,
        check=False,
        env=_cli_env(),
    )


class _DockerRun:
    """The work dir, channel FIFOs and seccomp profile of one container run."""

    def __init__(self, state_dir: Path, request: RunRequest) -> None:
        self.request = request
        self.name = cgroups.new_cgroup_name()
        self.workdir = TmpfsWorkdir(
            state_dir,
            self.name,
            request.limits.workdir_bytes,
            owner=(CONTAINER_UID, CONTAINER_GID),
        )
        self.channel_dir = self.workdir.root / "channel"
        self.profile = self.workdir.root / "seccomp.json"
        self.arena_dir = HOST_SHM / f"{self.name}-arena"
        self.arena: Arena | None = None
        self.fds = RunFds()
        self._released = False

    def prepare(self) -> None:
        self.workdir.create()
        self.workdir.write_files(self.request.files)
        self.profile.write_text(json.dumps(seccomp.docker_profile(self.request.network)))
        self.channel_dir.mkdir(mode=0o755)
        fifo_in, fifo_out = self.channel_dir / "in", self.channel_dir / "out"
        for fifo in (fifo_in, fifo_out):
            os.mkfifo(fifo, 0o600)
            os.chown(fifo, CONTAINER_UID, CONTAINER_GID)
        # Read-write: opening a FIFO end inside never waits for this side.
        self.fds.parent_in = os.open(fifo_in, os.O_RDWR | os.O_CLOEXEC)
        self.fds.parent_out = os.open(fifo_out, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
        self.fds.open_stdio(with_stdin=bool(self.request.stdin))
        if self.request.arena_bytes > 0:
            self.arena_dir.mkdir(mode=0o755)
            self.arena = Arena.file(
                self.arena_dir / "arena",
                self.request.arena_bytes,
                owner=(CONTAINER_UID, CONTAINER_GID),
            )

    def release(self, docker: str) -> None:
        if self._released:
            return
        self._released = True
        errors: list[BaseException] = []
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _docker(docker, "rm", "-f", self.name)
        try:
            self.workdir.release()
        except (SandboxError, OSError) as exc:
            errors.append(exc)
        if self.arena is not None:
            self.arena.close()
        shutil.rmtree(self.arena_dir, ignore_errors=True)
        self.fds.close_all()
        if errors:
            raise SandboxError(f"cleanup after a container run failed: {errors}")


class DockerProcess(SupervisedProcess):
    """A started container run (see ``supervise.py`` for how it is watched)."""

    def __init__(
        self,
        request: RunRequest,
        run: _DockerRun,
        argv: list[str],
        *,
        docker: str,
        supervise_in_thread: bool,
    ) -> None:
        self._run = run
        self._docker = docker
        self._container_pid: int | None = None
        self._run_cgroup: cgroups.RunCgroup | None = None
        self._next_inspect = 0.0
        self._last_cpu_s = 0.0
        super().__init__(
            request,
            run.fds,
            argv,
            supervise_in_thread=supervise_in_thread,
            launcher_env=_cli_env(),
            arena=run.arena,
        )

    # --- cgroup and witnesses ----------------------------------------------------------

    def _cgroup(self) -> cgroups.RunCgroup | None:
        if self._run_cgroup is None and time.monotonic() >= self._next_inspect:
            self._next_inspect = time.monotonic() + INSPECT_EVERY_S
            state = self._inspect()
            pid = state.get("Pid") if state else None
            if isinstance(pid, int) and pid > 0:
                self._container_pid = pid
                self._run_cgroup = cgroups.of_process(pid)
        return self._run_cgroup

    def _inspect(self) -> dict[str, object] | None:
        try:
            out = _docker(self._docker, "inspect", "--format", "{{json .State}}", self._run.name)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if out.returncode != 0:
            return None
        with contextlib.suppress(json.JSONDecodeError):
            state = json.loads(out.stdout)
            if isinstance(state, dict):
                return state
        return None

    def host_pids(self) -> list[int]:
        """Every process in the container, its init (tini) included: code running as
        the container user may reach init through ``/proc/1/mem``."""
        cgroup = self._cgroup()
        if cgroup is None:
            return []
        return cgroup.pids()

    def cpu_time_s(self) -> float:
        cgroup = self._cgroup()
        if cgroup is not None:
            # The cgroup goes with the container: remember the last reading.
            self._last_cpu_s = max(self._last_cpu_s, cgroup.cpu_time_s())
        return self._last_cpu_s

    # --- channel: the FIFOs never see EOF or EPIPE, so watch the container instead ----

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        with selectors.DefaultSelector() as sel:
            sel.register(self._fds.parent_in, selectors.EVENT_WRITE)
            sel.register(self._pidfd, selectors.EVENT_READ)
            while view:
                ready = {key.fd for key, _ in sel.select()}
                if self._pidfd in ready:
                    raise BrokenPipeError("the container has exited")
                view = view[os.write(self._fds.parent_in, view[: 1 << 16]) :]

    def recv(self, timeout_s: float) -> bytes | None:
        fd = self._fds.parent_out
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            sel.register(self._pidfd, selectors.EVENT_READ)
            ready = {key.fd for key, _ in sel.select(max(0.0, timeout_s))}
        if not ready:
            return None
        with contextlib.suppress(BlockingIOError):
            return os.read(fd, 1 << 16)
        return b""  # the container has exited and nothing is left to read

    # --- ending ------------------------------------------------------------------------

    def _backend_kill(self) -> None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _docker(self._docker, "kill", self._run.name)

    def _check_limits(self) -> None:
        self.cpu_time_s()
        super()._check_limits()

    def _release(self) -> None:
        self._run.release(self._docker)

    def _make_result(self) -> RunResult:
        state = self._inspect() or {}
        if not state.get("StartedAt") or str(state.get("StartedAt")).startswith("0001-"):
            raise SandboxError(f"docker could not start the container: {self._stderr_tail()}")
        returncode = self._popen.returncode
        exit_code, sig = split_exit_code(returncode) if returncode >= 0 else (None, -returncode)
        if self._killed and exit_code is None and sig is None:
            sig = signal.SIGKILL
        cpu = self._last_cpu_s
        limit: LimitName | None = self._kill_reason
        if limit is None and state.get("OOMKilled"):
            limit = "memory"
        if limit is None:
            largest = self._run.workdir.largest_file_bytes()
            limit = self._common_limit_hit(sig, cpu, largest, self._limits.file_size_bytes)
        files = self._run.workdir.collect(self._request.collect)
        return self._base_result(
            exit_code=exit_code, sig=sig, cpu_time_s=cpu, limit_exceeded=limit, files=files
        )
