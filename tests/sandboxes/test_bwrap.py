"""The bubblewrap backend, against the real bwrap, cgroups and kernel of this host.

No Django here. The GPU test checks only the arguments built for bwrap: this
host has no GPU, so GPU device passthrough itself was not run.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import random
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sandboxes import cgroups, workdir
from sandboxes.base import Limits, MiB, RunRequest, RunResult, SandboxUnavailable
from sandboxes.bwrap import BwrapSandbox

PY = sys.executable
PROJECT_ROOT = Path(__file__).resolve().parents[2]
FAST = Limits(wall_time_s=20.0, cpu_time_s=20.0, memory_bytes=512 * MiB, workdir_bytes=16 * MiB)


@pytest.fixture(scope="module")
def sandbox() -> BwrapSandbox:
    backend = BwrapSandbox()
    backend.check()
    return backend


def run_py(sandbox: BwrapSandbox, code: str, limits: Limits = FAST, **kwargs) -> RunResult:
    return sandbox.run(RunRequest(argv=[PY, "-c", code], limits=limits, **kwargs))


def report(result: RunResult) -> dict:
    """The JSON the sandboxed snippet printed as its last line."""
    assert result.exit_code == 0, result.stderr.decode(errors="replace")
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


def host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def mount_lines(targets: list[str]) -> list[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [line for line in lines if line.split()[4] in targets]


def own_run_cgroups() -> list[Path]:
    prefix = f"{cgroups.NAME_PREFIX}{os.getpid()}-"
    return [p for parent in cgroups.detect().parents() for p in parent.glob(prefix + "*")]


# --- isolation ----------------------------------------------------------------------


def test_network_has_only_loopback_and_host_listeners_are_unreachable(sandbox):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        code = f"""
import json, socket
interfaces = [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]]
tcp = open("/proc/net/tcp").read()
errors = {{}}
for target in [("127.0.0.1", {port}), ("127.0.0.1", 6379), ("127.0.0.1", 5432)]:
    try:
        socket.create_connection(target, timeout=2).close()
        errors[str(target[1])] = None
    except OSError as exc:
        errors[str(target[1])] = exc.errno
print(json.dumps({{"interfaces": interfaces, "listed": ":%04X" % {port} in tcp, "errors": errors}}))
"""
        seen = report(run_py(sandbox, code))
    finally:
        listener.close()
    assert seen["interfaces"] == ["lo"]
    assert seen["listed"] is False
    assert all(err in (errno.EPERM, errno.EACCES) for err in seen["errors"].values()), seen


def test_root_filesystem_dev_and_python_environment_are_read_only(sandbox):
    targets = ["/x", "/usr/x", "/etc/x", "/dev/x", "/root/x", f"{sys.prefix}/x"]
    targets.append(f"{sys.base_prefix}/x")
    code = f"""
import json
out = {{}}
for path in {targets!r}:
    try:
        open(path, "w").close()
        out[path] = 0
    except OSError as exc:
        out[path] = exc.errno
print(json.dumps(out))
"""
    assert report(run_py(sandbox, code)) == {path: errno.EROFS for path in targets}


def test_work_dir_and_tmp_are_writable_but_capped(sandbox):
    limits = Limits(wall_time_s=20, workdir_bytes=4 * MiB, file_size_bytes=64 * MiB)
    code = """
import json, os
out = {"small": open("/work/small", "wb").write(b"x" * 1000)}
for path in ("/work/big", "/tmp/big"):
    try:
        with open(path, "wb") as f:
            f.write(b"x" * (8 << 20))
        out[path] = 0
    except OSError as exc:
        out[path] = exc.errno
    os.unlink(path)
print(json.dumps(out))
"""
    seen = report(run_py(sandbox, code, limits=limits))
    assert seen == {"small": 1000, "/work/big": errno.ENOSPC, "/tmp/big": errno.ENOSPC}


def test_host_files_outside_the_binds_are_invisible(sandbox):
    probes = [
        str(PROJECT_ROOT / "pyproject.toml"),
        str(PROJECT_ROOT / "sandboxes"),
        "/root/.bashrc",
        "/root/.ssh",
        "/etc/shadow",
        "/etc/hostname",
        "/home",
        "/var",
    ]
    code = f"""
import json, os
print(json.dumps({{
    "exists": [p for p in {probes!r} if os.path.lexists(p)],
    "root": sorted(os.listdir("/root")) if os.path.isdir("/root") else [],
    "hostname": os.uname().nodename,
}}))
"""
    seen = report(run_py(sandbox, code))
    assert seen["exists"] == []
    # Only the path down to the interpreter's install prefix, never the home directory.
    expected_root = sorted({Path(p).parts[2] for p in (sys.base_prefix,) if p.startswith("/root/")})
    assert seen["root"] == expected_root
    assert seen["hostname"] == "sandbox"


def test_kernel_settings_are_not_writable(sandbox):
    # Each setting is written back with the value it already has, so even a failure of
    # this test changes nothing on the host.
    settings = [
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/kernel/randomize_va_space",
        "/proc/sys/vm/overcommit_memory",
    ]
    code = f"""
import json
out = {{}}
for path in {settings!r}:
    value = open(path, "rb").read()
    try:
        with open(path, "wb") as f:
            f.write(value)
        out[path] = 0
    except OSError as exc:
        out[path] = exc.errno
print(json.dumps(out))
"""
    seen = report(run_py(sandbox, code))
    assert set(seen) == set(settings)
    assert all(err in (errno.EACCES, errno.EPERM, errno.EROFS) for err in seen.values()), seen


def test_unreachable_interpreter_is_staged_once(sandbox):
    # The interpreter's prefix sits under /root (mode 0700 here): the sandbox's host uid
    # cannot reach it, so it is bound from one read-only staged mount, reused by every run.
    assert not workdir.reachable_by(sys.base_prefix, sandbox.host_id, sandbox.host_id)
    for _ in range(2):
        assert run_py(sandbox, "import json").ok
    staged = [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if f"{sandbox.state_dir}/{workdir.STAGING}/" in line.split()[4]
    ]
    assert len(staged) == len(set(staged)) >= 1
    assert all("ro" in line.split()[5].split(",") for line in mount_lines(staged))


def test_environment_is_exactly_the_requested_one(sandbox, monkeypatch):
    monkeypatch.setenv("BENCHWRIGHT_TEST_SECRET", "hunter2")
    code = """
import json
raw = open("/proc/self/environ", "rb").read().split(b"\\0")
print(json.dumps(dict(item.decode().split("=", 1) for item in raw if item)))
"""
    wanted = {"ALPHA": "1", "BETA": "two words"}
    result = run_py(sandbox, code, env=wanted)
    assert report(result) == wanted
    assert b"hunter2" not in result.stdout


def test_code_runs_as_uid_and_gid_65534_without_capabilities(sandbox):
    code = """
import json, os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
                  "cap": status["CapEff"].strip(), "nnp": status["NoNewPrivs"].strip(),
                  "seccomp": status["Seccomp"].strip(), "pid": os.getpid()}))
"""
    seen = report(run_py(sandbox, code))
    assert (seen["uid"], seen["gid"], seen["euid"]) == (65534, 65534, 65534)
    assert int(seen["cap"], 16) == 0
    assert seen["nnp"] == "1"
    assert seen["seccomp"] == "2"  # a filter is installed
    assert seen["pid"] == 2  # its own PID namespace, bwrap's init is PID 1


def test_the_namespace_numbers_every_thread_the_process_starts(sandbox):
    """What the profile runner's count of unhooked threads rests on
    (``Watch._unhooked_threads``): in the sandbox's PID namespace only the sandboxed
    process starts tasks, so the last id handed out moves by exactly one per thread,
    whether the thread still runs or is long gone, and no other number is taken."""
    assert BwrapSandbox.own_pid_namespace
    code = """
import _thread, json, threading, time
from pathlib import Path
last = lambda: int(Path("/proc/sys/kernel/ns_last_pid").read_text())
ids, before = [], last()
for _ in range(5):
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(lambda: (ids.append(threading.get_native_id()), done.release()), ())
    done.acquire()
time.sleep(0.05)
print(json.dumps({"before": before, "after": last(), "ids": ids}))
"""
    seen = report(run_py(sandbox, code))
    assert seen["ids"] == list(range(seen["before"] + 1, seen["before"] + 6))
    assert seen["after"] == seen["before"] + 5


# --- limits -------------------------------------------------------------------------


def test_fork_bomb_is_stopped_by_the_pids_limit(sandbox):
    marker = f"forkbomb{random.randrange(10**9)}"
    code = f"""# {marker}
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
    limits = Limits(wall_time_s=20, max_processes=16)
    started = time.monotonic()
    result = run_py(sandbox, code, limits=limits)
    assert result.limit_exceeded == "processes"
    assert time.monotonic() - started < 10
    assert host_processes_with(marker) == []
    assert own_run_cgroups() == []


def test_memory_hog_gets_memory(sandbox):
    code = """
chunks = []
while True:
    chunks.append(b"x" * (4 << 20))
"""
    result = run_py(sandbox, code, limits=Limits(wall_time_s=20, memory_bytes=96 * MiB))
    assert result.limit_exceeded == "memory"
    assert result.exit_code is None and result.signal == signal.SIGKILL


def test_sleeping_forever_gets_wall_time(sandbox):
    code = "import time\nwhile True:\n    time.sleep(1)"
    result = run_py(sandbox, code, limits=Limits(wall_time_s=0.5))
    assert result.limit_exceeded == "wall_time"
    assert result.signal == signal.SIGKILL
    assert 0.5 <= result.wall_time_s < 3.0
    assert result.cpu_time_s < 0.5


def test_cpu_spin_gets_cpu_time(sandbox):
    result = run_py(sandbox, "while True:\n    pass", limits=Limits(wall_time_s=20, cpu_time_s=0.5))
    assert result.limit_exceeded == "cpu_time"
    assert result.cpu_time_s >= 0.5
    assert result.wall_time_s < 5


def test_cpu_time_counts_every_process_of_the_run(sandbox):
    # Each of two processes stays under RLIMIT_CPU; together they pass the limit.
    code = """
import os, time
os.fork()
end = time.monotonic() + 30
while time.monotonic() < end:
    pass
"""
    limits = Limits(wall_time_s=20, cpu_time_s=0.6)
    result = run_py(sandbox, code, limits=limits)
    assert result.limit_exceeded == "cpu_time"
    assert result.wall_time_s < 5


def test_output_flood_is_truncated(sandbox):
    code = """
import sys
for _ in range(1000):
    sys.stdout.write("y" * 10000)
print("done", file=sys.stderr)
"""
    result = run_py(sandbox, code, limits=Limits(wall_time_s=20, output_bytes=1000))
    assert result.exit_code == 0
    assert result.stdout == b"y" * 1000 and result.stdout_truncated
    assert result.stderr == b"done\n" and not result.stderr_truncated
    assert result.limit_exceeded == "output"


def test_big_file_gets_file_size_from_python_and_native_writers(sandbox):
    limits = Limits(wall_time_s=20, file_size_bytes=1 * MiB, workdir_bytes=8 * MiB)
    python = run_py(sandbox, "open('/work/big', 'wb').write(b'x' * (2 << 20))", limits=limits)
    assert python.limit_exceeded == "file_size"
    assert b"File too large" in python.stderr
    native = sandbox.run(
        RunRequest(argv=["/bin/sh", "-c", "head -c 2097152 /dev/zero > /tmp/big"], limits=limits)
    )
    assert native.limit_exceeded == "file_size"
    assert native.signal == signal.SIGXFSZ


def test_detached_daemon_is_gone_after_the_run(sandbox):
    marker = f"31{random.randrange(10**8):08d}"
    code = f"""
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        with open("/work/daemon.pid", "w") as f:
            f.write(str(os.getpid()))
        os.execv("/bin/sleep", ["/bin/sleep", "{marker}"])
    os._exit(0)
os.wait()
while not os.path.exists("/work/daemon.pid"):
    time.sleep(0.01)
time.sleep(0.1)
"""
    result = run_py(sandbox, code, collect=["daemon.pid"])
    assert result.exit_code == 0 and "daemon.pid" in result.files  # it did start
    assert host_processes_with(marker) == []
    assert own_run_cgroups() == []
    own_runs = f"{sandbox.state_dir}/{cgroups.NAME_PREFIX}{os.getpid()}-"
    assert own_runs not in Path("/proc/self/mountinfo").read_text()
    assert not list(sandbox.state_dir.glob(f"{cgroups.NAME_PREFIX}{os.getpid()}-*"))


def test_seccomp_refuses_dangerous_calls_and_non_unix_sockets(sandbox):
    code = """
import ctypes, json, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return [rc, ctypes.get_errno()]
out = {
    "ptrace": call(101, 0, 0, 0, 0),        # PTRACE_TRACEME
    "keyctl": call(250, 0, -3, 0),          # KEYCTL_GET_KEYRING_ID
    "add_key": call(248, 0, 0, 0, 0, 0),
    "io_uring_setup": call(425, 8, 0),
    "bpf": call(321, 0, 0, 0),
    "unshare": call(272, 0x10000000),       # CLONE_NEWUSER
    "perf_event_open": call(298, 0, 0, -1, -1, 0),
    # Sources of work the kernel does for a frozen process (see sandboxes/seccomp.py).
    "timer_create": call(222, 1, 0, 0),     # CLOCK_MONOTONIC
    "timerfd_create": call(283, 1, 0),
    "signalfd4": call(289, -1, 0, 8, 0),
    "signalfd": call(282, -1, 0, 8),
}
families = [
    ("inet", socket.AF_INET, socket.SOCK_STREAM),
    ("inet6", socket.AF_INET6, socket.SOCK_STREAM),
    ("netlink", socket.AF_NETLINK, socket.SOCK_DGRAM),
    ("vsock", 40, socket.SOCK_STREAM),
]
for name, family, kind in families:
    try:
        socket.socket(family, kind).close()
        out[name] = [0, 0]
    except OSError as exc:
        out[name] = [-1, exc.errno]
a, b = socket.socketpair(socket.AF_UNIX)
a.sendall(b"ok")
out["unix"] = b.recv(2).decode()
print(json.dumps(out))
"""
    seen = report(run_py(sandbox, code))
    assert seen.pop("unix") == "ok"
    assert seen == {name: [-1, errno.EPERM] for name in seen}
    assert set(seen) >= {"ptrace", "keyctl", "io_uring_setup", "bpf", "inet", "inet6", "netlink"}
    assert set(seen) >= {"timer_create", "timerfd_create", "signalfd", "signalfd4"}


def test_a_loopback_run_talks_tcp_to_itself_and_reaches_nothing_else(sandbox):
    # What torch.distributed's gloo needs (a TCP store, getifaddrs over route netlink),
    # in the run's own namespace: the host's listener on 127.0.0.1 is not there.
    listener = socket.create_server(("127.0.0.1", 0))
    host_port = listener.getsockname()[1]
    code = f"""
import ctypes, errno, json, socket
out = {{}}
server = socket.create_server(("127.0.0.1", 0))
client = socket.create_connection(server.getsockname())
conn, _ = server.accept()
client.sendall(b"ping")
out["tcp"] = conn.recv(4).decode()
six = socket.create_server(("::1", 0), family=socket.AF_INET6)
socket.create_connection(six.getsockname()[:2]).close()
out["tcp6"] = "ok"
out["interfaces"] = sorted(name for _, name in socket.if_nameindex())
def attempt(name, make):
    try:
        make().close()
        out[name] = 0
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, exc.errno)
attempt("host_listener", lambda: socket.create_connection(("127.0.0.1", {host_port}), timeout=5))
attempt("outside", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5))
attempt("netlink_route", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("netlink_audit", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("vsock", lambda: socket.socket(40, socket.SOCK_STREAM))
# AF_INET with high bits set: the kernel reads an int and would take it for AF_INET.
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
args = (41, (1 << 32) | socket.AF_INET, socket.SOCK_STREAM, 0)  # socket(2)
rc = libc.syscall(*[ctypes.c_long(a) for a in args])
out["high_bits"] = "EPERM" if rc == -1 and ctypes.get_errno() == errno.EPERM else rc
attempt("bluetooth", lambda: socket.socket(31, socket.SOCK_STREAM))
print(json.dumps(out))
"""
    try:
        seen = report(run_py(sandbox, code, network="loopback"))
    finally:
        listener.close()
    assert seen.pop("tcp") == "ping" and seen.pop("tcp6") == "ok"
    assert seen.pop("interfaces") == ["lo"]
    assert seen.pop("netlink_route") == 0
    assert seen.pop("host_listener") == "ECONNREFUSED"
    assert seen.pop("outside") == "ENETUNREACH"
    assert seen == dict.fromkeys(seen, "EPERM")
    assert set(seen) == {"netlink_audit", "packet", "raw", "vsock", "high_bits", "bluetooth"}


def test_an_unknown_network_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="unknown network 'host'; known: none, loopback"):
        RunRequest(argv=["true"], network="host")  # type: ignore[arg-type]


def test_the_page_cache_can_be_neither_read_nor_evicted_but_files_read_as_usual(sandbox):
    # Every sandbox reads the same Python environment: whether its pages are cached
    # would be a channel between sandboxes (see sandboxes/seccomp.py).
    code = f"""
import ctypes, errno, json, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
path = {PY!r}
fd = os.open(path, os.O_RDONLY)
out = {{}}
def attempt(name, call):
    try:
        call()
        out[name] = 0
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno, exc.errno)
def fadvise(advice):
    os.posix_fadvise(fd, 0, 4096, advice)
attempt("fadvise_dontneed", lambda: fadvise(os.POSIX_FADV_DONTNEED))
attempt("fadvise_sequential", lambda: fadvise(os.POSIX_FADV_SEQUENTIAL))
buf = bytearray(4096)
attempt("preadv2_nowait", lambda: os.preadv(fd, [buf], 0, os.RWF_NOWAIT))
attempt("read", lambda: os.pread(fd, 16, 0))
region = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
attempt("madvise_pageout", lambda: region.madvise(21, 0, 4096))
attempt("madvise_cold", lambda: region.madvise(20, 0, 4096))
attempt("madvise_willneed", lambda: region.madvise(mmap.MADV_WILLNEED, 0, 4096))
anonymous = mmap.mmap(-1, 4096)
vec = (ctypes.c_ubyte * 1)()
ctypes.set_errno(0)
start = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(anonymous)))
rc = libc.mincore(start, ctypes.c_size_t(4096), vec)
out["mincore"] = 0 if rc == 0 else errno.errorcode.get(ctypes.get_errno())
print(json.dumps(out))
"""
    seen = report(run_py(sandbox, code))
    assert seen == {
        "fadvise_dontneed": "EPERM",
        "fadvise_sequential": 0,
        "preadv2_nowait": "EPERM",
        "read": 0,
        "madvise_pageout": "EPERM",
        "madvise_cold": "EPERM",
        "madvise_willneed": 0,
        "mincore": "EPERM",
    }


def test_seccomp_kills_calls_through_another_abi(sandbox):
    # The x32 number of io_uring_setup: must not slip past a filter written for x86-64.
    code = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
rc = libc.syscall(ctypes.c_long(0x40000000 | 425), ctypes.c_long(8), ctypes.c_long(0))
print(rc, ctypes.get_errno())
"""
    result = run_py(sandbox, code)
    assert result.signal == signal.SIGSYS, result


@pytest.mark.slow
def test_torch_and_the_triton_interpreter_work_inside(sandbox):
    code = """
import json, torch, triton, triton.language as tl

@triton.jit
def double(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y + offs, tl.load(x + offs, mask=mask) * 2, mask=mask)

a = torch.arange(100.0)
b = torch.empty_like(a)
double[(1,)](a, b, 100, BLOCK=128)
m = torch.ones(64, 64)
print(json.dumps({"triton": torch.equal(b, a * 2), "matmul": (m @ m)[0, 0].item()}))
"""
    limits = Limits(wall_time_s=60, cpu_time_s=60)
    result = run_py(sandbox, code, limits=limits, env={"TRITON_INTERPRET": "1"})
    assert report(result) == {"triton": True, "matmul": 64.0}


# --- driving a run ------------------------------------------------------------------


ECHO_UPPER = """
import os
commands, replies = os.fdopen(3, "rb"), os.fdopen(4, "wb", buffering=0)
for line in commands:
    replies.write(line.upper())
"""


def recv_until(process, wanted: bytes, timeout_s: float = 10.0) -> bytes:
    data, deadline = b"", time.monotonic() + timeout_s
    while wanted not in data and time.monotonic() < deadline:
        chunk = process.recv(deadline - time.monotonic())
        if not chunk:
            break
        data += chunk
    return data


def test_channel_round_trips(sandbox):
    process = sandbox.start(RunRequest(argv=[PY, "-c", ECHO_UPPER], limits=FAST))
    try:
        process.send(b"hello\n")
        assert recv_until(process, b"\n") == b"HELLO\n"
        process.send(b"second line\n")
        assert recv_until(process, b"\n") == b"SECOND LINE\n"
        assert process.recv(0.05) is None  # nothing more to read yet
    finally:
        result = process.finish()
    assert result.exit_code == 0 and result.limit_exceeded is None


@pytest.mark.timeout(30)
def test_send_and_recv_do_not_hang_after_the_child_dies(sandbox):
    process = sandbox.start(RunRequest(argv=[PY, "-c", "import os; os._exit(7)"], limits=FAST))
    try:
        assert process.recv(10.0) == b""  # end of file: nothing inside holds fd 4 any more
        with pytest.raises(BrokenPipeError):
            process.send(b"x" * (1 << 20))
    finally:
        result = process.finish()
    assert result.exit_code == 7


def test_witnesses_read_from_outside_see_threads_processes_and_cpu(sandbox):
    code = """
import os, threading
release = threading.Event()
for _ in range(5):
    threading.Thread(target=release.wait).start()
end = __import__("time").process_time() + 0.2
while __import__("time").process_time() < end:
    pass
os.write(4, b"ready\\n")
os.read(3, 1)
release.set()
"""
    process = sandbox.start(RunRequest(argv=[PY, "-c", code], limits=FAST))
    try:
        assert recv_until(process, b"ready\n") == b"ready\n"
        pids = process.host_pids()
        assert len(pids) == 2  # bwrap's init (PID 1 inside) and the command
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids]
        assert sum(command.startswith(PY.encode()) for command in commands) == 1
        for pid in pids:
            status = Path(f"/proc/{pid}/status").read_text()
            host_uid = next(line for line in status.splitlines() if line.startswith("Uid:"))
            assert host_uid.split()[1:] == [str(sandbox.host_id)] * 4  # never host root
        assert process.thread_count() == 7  # init's one thread, the command's six
        assert process.cpu_time_s() >= 0.2
        process.send(b"x")
    finally:
        result = process.finish()
    assert result.exit_code == 0


def test_kill_ends_the_run_at_once(sandbox):
    process = sandbox.start(RunRequest(argv=[PY, "-c", "import time; time.sleep(60)"]))
    time.sleep(0.2)
    process.kill()
    result = process.finish(timeout_s=10)
    assert result.signal == signal.SIGKILL
    assert result.wall_time_s < 5


def test_files_go_in_before_and_are_collected_after(sandbox):
    code = """
import os
data = open("in/data.txt", "rb").read()
os.makedirs("out")
open("out/result.txt", "wb").write(data.upper())
os.symlink("/work/main/pyproject.toml", "leak")
os.symlink("/etc/passwd", "passwd")
os.mkfifo("fifo")
"""
    result = run_py(
        sandbox,
        code,
        files={"in/data.txt": b"abc"},
        collect=["out/result.txt", "leak", "passwd", "fifo", "missing.txt"],
    )
    assert result.exit_code == 0, result.stderr
    # Links, FIFOs and missing files are never followed or read on the host.
    assert result.files == {"out/result.txt": b"ABC"}


def test_stdin_exit_codes_and_signals_are_reported(sandbox):
    echo = run_py(sandbox, "import sys; sys.stdout.write(sys.stdin.read().upper())", stdin=b"abc")
    assert echo.stdout == b"ABC"
    assert run_py(sandbox, "raise SystemExit(3)").exit_code == 3
    killed = run_py(sandbox, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    assert (killed.exit_code, killed.signal) == (None, signal.SIGTERM)


# --- availability and arguments -----------------------------------------------------


def test_unavailable_without_bwrap_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    backend = BwrapSandbox()
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        backend.check()
    with pytest.raises(SandboxUnavailable):
        backend.run(RunRequest(argv=[PY, "-c", "print('ran')"]))


def test_paths_that_leave_the_work_dir_are_refused(sandbox):
    for name in ("../escape", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(ValueError):
            sandbox.start(RunRequest(argv=[PY, "-c", "pass"], files={name: b"x"}))
    with pytest.raises(ValueError):
        sandbox.start(RunRequest(argv=[PY, "-c", "pass"], collect=["../x"]))


def test_gpu_request_passes_devices_and_drops_the_address_space_limit():
    # Argument building only: this host has no GPU, so no GPU run was made here.
    backend = BwrapSandbox()
    request = RunRequest(argv=["python", "x.py"], gpus=[1])
    args = backend.bwrap_args(request, work_src="/w", tmp_src="/t", seccomp_fd=10, status_fd=11)
    joined = " ".join(args)
    for device in ("/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"):
        assert f"--dev-bind {device} {device}" in joined
    assert "--dev-bind-try /dev/nvidia-modeset /dev/nvidia-modeset" in joined
    assert "--ro-bind /sys /sys" in joined
    assert "/dev/nvidia0" not in joined
    dev = args.index("--dev")
    assert dev < args.index("/dev/nvidia1") < args.index("--remount-ro")

    def launcher(req: RunRequest) -> list[str]:
        return backend.launcher_argv(
            req, bwrap="/usr/bin/bwrap", join_files=[], chan_in=12, chan_out=13, bwrap_args=[]
        )

    assert "-v" not in launcher(request)
    assert "-v" in launcher(RunRequest(argv=["python", "x.py"]))
    with pytest.raises(SandboxUnavailable, match="/dev/nvidia7"):
        backend.start(RunRequest(argv=["python", "x.py"], gpus=[7]))


def test_mounts_are_ordered_parent_before_child():
    backend = BwrapSandbox()
    request = RunRequest(argv=["true"], ro_binds=[("/usr/share", "/tmp/data/share")])
    args = backend.bwrap_args(request, work_src="/w", tmp_src="/t", seccomp_fd=10, status_fd=11)
    assert args.index("/tmp") < args.index("/tmp/data/share")
    assert args.index("--dev") < args.index("/dev/shm")
    assert args[-10:-6] == ["--remount-ro", "/dev", "--remount-ro", "/"]


def test_concurrent_runs_do_not_interfere(sandbox):
    def one(index: int) -> RunResult:
        code = "import sys; open('out', 'w').write(sys.stdin.read() * 2)"
        return run_py(sandbox, code, stdin=str(index).encode(), collect=["out"])

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(12)))
    assert [r.files for r in results] == [{"out": str(i).encode() * 2} for i in range(12)]
    assert all(r.ok for r in results)
    assert own_run_cgroups() == []


ARENA_AND_ADDRESS = """
import ctypes, fcntl, mmap, os
arena = mmap.mmap(5, 4096)
seen = bytes(arena[:5])
arena[8:13] = b"world"
try:
    os.ftruncate(5, 0)
    shrunk = True
except OSError:
    shrunk = False
try:
    fcntl.fcntl(5, 1033, 8)  # F_ADD_SEALS, F_SEAL_WRITE: would block the grader's writes
    sealed = True
except OSError:
    sealed = False
secret = ctypes.create_string_buffer(b"only in this process's memory")
os.write(4, f"{seen!r} {shrunk} {sealed} {ctypes.addressof(secret)} {os.getpid()}\\n".encode())
os.read(3, 1)
"""


def test_the_arena_is_shared_sealed_and_the_grader_reads_memory_from_outside(sandbox):
    from sandboxes import procstat

    process = sandbox.start(
        RunRequest(argv=[PY, "-c", ARENA_AND_ADDRESS], limits=FAST, arena_bytes=1 << 20)
    )
    try:
        assert process.arena is not None
        process.arena.write(0, b"hello")
        line = recv_until(process, b"\n").decode().split()
        assert line[:3] == ["b'hello'", "False", "False"]  # seen; no shrinking, no new seals
        assert process.arena.read(8, 5) == b"world"
        address, inner_pid = int(line[3]), int(line[4])
        [harness] = [pid for pid in process.host_pids() if procstat.namespace_pid(pid) == inner_pid]
        into = ctypes.create_string_buffer(29)
        procstat.read_memory(harness, address, ctypes.addressof(into), 29)
        assert into.raw == b"only in this process's memory"
        with pytest.raises(procstat.MemoryReadError):
            procstat.read_memory(harness, 8, ctypes.addressof(into), 29)
        process.send(b"x")
    finally:
        result = process.finish()
    assert result.exit_code == 0


def test_a_frozen_sandbox_does_nothing_until_thawed(sandbox):
    spin = "import os\nos.write(4, b'go')\nwhile True:\n    pass\n"
    process = sandbox.start(RunRequest(argv=[PY, "-c", spin], limits=FAST))
    try:
        assert recv_until(process, b"go") == b"go"
        time.sleep(0.2)
        process.freeze()
        frozen_at = process.cpu_time_s()
        time.sleep(0.3)
        assert process.cpu_time_s() == frozen_at  # exact: nothing ran, nothing half-counted
        process.thaw()
        time.sleep(0.3)
        assert process.cpu_time_s() > frozen_at + 0.1
        process.freeze()
        process.kill()  # a frozen run can still be killed
    finally:
        result = process.finish(timeout_s=5)
    assert result.signal == 9


def test_reading_the_memory_of_a_process_that_is_gone_says_so() -> None:
    # Killed by a limit between its reply and the grader's read: not a false
    # description of its output, the process went away (the limit decides the verdict).
    import ctypes
    import subprocess
    import sys

    from sandboxes import procstat

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    buffer = ctypes.create_string_buffer(16)
    with pytest.raises(procstat.ProcessGone):
        procstat.read_memory(child.pid, 0x10000, ctypes.addressof(buffer), 16)
    with pytest.raises(procstat.MemoryReadError) as unmapped:
        procstat.read_memory(os.getpid(), 0x10, ctypes.addressof(buffer), 16)
    assert not isinstance(unmapped.value, procstat.ProcessGone)
