"""The re-profile runner's channel is out of the program thread's reach: in the real
sandbox, a thread that loaded ``channel_guard``'s filter tries every route to the
reply descriptor it could take, while the thread that did not answers on it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from graders.profiling.profile_runner import channel_guard
from sandboxes.base import Limits, MiB, RunRequest
from sandboxes.bwrap import BwrapSandbox

GUARD = Path(channel_guard.__file__)

# Each route a program could take to write on fd 4 (or read fd 3, or close them),
# tried on a filtered thread, then from a thread and a process it starts.
PROGRAM = r"""
import ctypes, errno, fcntl, json, os, socket, sys, threading
sys.path.insert(0, ".")
from channel_guard import guard_channel

results = {}
libc = ctypes.CDLL(None, use_errno=True)


def attempt(name, route):
    try:
        route()
        results[name] = "done"
    except OSError as exc:
        results[name] = errno.errorcode.get(exc.errno, str(exc.errno))


def checked(value):
    if value < 0:
        raise OSError(ctypes.get_errno(), "refused")
    return value


def send_on_socket():
    channel = socket.socket(fileno=4)
    try:
        channel.send(b"forged")
    finally:
        channel.detach()


def sendfile():
    with open("payload", "wb") as payload:
        payload.write(b"forged")
    source = os.open("payload", os.O_RDONLY)
    os.sendfile(4, source, 0, 6)


def splice():
    read_end, write_end = os.pipe()
    os.write(write_end, b"forged")
    os.splice(read_end, 4, 6)


def pass_as_rights():
    mine, theirs = socket.socketpair()
    socket.send_fds(mine, [b"x"], [4])


def pidfd_getfd():
    pidfd = os.pidfd_open(os.getpid())
    checked(libc.syscall(438, pidfd, 4, 0))


def forked_child():
    pid = os.fork()
    if pid == 0:
        try:
            os.write(4, b"forged")
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(errno.EPERM, "refused in the child")


def started_thread():
    route = lambda: os.write(4, b"forged")
    thread = threading.Thread(target=attempt, args=("write from its thread", route))
    thread.start()
    thread.join()


def program():
    guard_channel()
    attempt("write", lambda: os.write(4, b"forged"))
    attempt("writev", lambda: os.writev(4, [b"forged"]))
    attempt("send", send_on_socket)
    attempt("read the commands", lambda: os.read(3, 1))
    attempt("dup", lambda: os.dup(4))
    attempt("dup2 from", lambda: os.dup2(4, 40))
    attempt("dup2 onto", lambda: os.dup2(0, 4))
    attempt("fcntl dupfd", lambda: fcntl.fcntl(4, fcntl.F_DUPFD, 50))
    attempt("shutdown", lambda: checked(libc.shutdown(4, socket.SHUT_WR)))
    attempt("close", lambda: os.close(4))
    attempt("reopen", lambda: os.open("/proc/self/fd/4", os.O_WRONLY))
    attempt("sendfile", sendfile)
    attempt("splice", splice)
    attempt("scm_rights", pass_as_rights)
    attempt("pidfd_getfd", pidfd_getfd)
    attempt("close_range", lambda: checked(libc.syscall(436, 3, 4, 0)))
    attempt("seccomp", lambda: checked(libc.prctl(22, 0, 0, 0, 0)))
    attempt("fork", forked_child)
    started_thread()


thread = threading.Thread(target=program)
thread.start()
thread.join()
os.write(4, (json.dumps(results) + "\n").encode())
"""


@pytest.mark.slow
def test_a_filtered_thread_cannot_reach_the_channel_and_the_runner_still_can() -> None:
    sandbox = BwrapSandbox()
    sandbox.check()
    limits = Limits(wall_time_s=30.0, cpu_time_s=30.0, memory_bytes=512 * MiB)
    process = sandbox.start(
        RunRequest(
            argv=[sys.executable, "-c", PROGRAM],
            limits=limits,
            files={"channel_guard.py": GUARD.read_bytes()},
        )
    )
    data, deadline = b"", time.monotonic() + 30.0
    try:
        while not data.endswith(b"\n") and time.monotonic() < deadline:
            chunk = process.recv(deadline - time.monotonic())
            if not chunk:
                break
            data += chunk
    finally:
        result = process.finish()
    assert result.exit_code == 0, result.stderr.decode(errors="replace")
    # Nothing forged came before the unfiltered thread's line.
    results = json.loads(data)
    reopened = results.pop("reopen")
    assert reopened == "ENXIO"  # a socket: /proc/self/fd cannot open it again
    assert len(results) == 18, results
    assert set(results.values()) == {"EPERM"}, results


def test_every_call_the_guard_names_is_known_to_this_libseccomp() -> None:
    flt = channel_guard.channel_filter()
    assert flt is not None
    with pytest.raises((OSError, ValueError)):
        channel_guard.seccomp.SyscallFilter(channel_guard.seccomp.ALLOW).add_rule(
            channel_guard.seccomp.ERRNO(1), "no_such_call"
        )


def test_the_guard_names_the_sandboxes_channel() -> None:
    from sandboxes.base import CHANNEL_IN_FD, CHANNEL_OUT_FD

    assert channel_guard.CHANNEL_FDS == (CHANNEL_IN_FD, CHANNEL_OUT_FD)
