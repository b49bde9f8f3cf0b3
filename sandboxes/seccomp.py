"""The seccomp filter every sandboxed process runs under, compiled to BPF.

Everything is allowed except what a grading job never needs and an escape
or a side channel would: network sockets (only ``AF_UNIX`` may be created, so
``multiprocessing`` and torch's shared-memory handles keep working), tracing
other processes, the kernel keyring, io_uring (it bypasses this filter), eBPF,
perf events, mounting and namespaces, module loading and kexec, clock and
swap changes, and the timers and signal descriptors that can make the kernel do
work for a process while it is frozen (POSIX timers, timerfd, signalfd: a timer
expiring into a signalfd watched by many epoll sets costs milliseconds of
interrupt time, which is charged to whatever runs on that CPU, the reference
measured next). Refused calls fail with ``EPERM``, which libraries handle as
"not allowed" instead of crashing.

Only the native architecture is allowed: a call made through another ABI
(``int 0x80`` from a 64-bit process, x32) kills the process, so the filter
cannot be sidestepped by numbering the same call differently.

The BPF is built once per process with libseccomp (the ``pyseccomp`` package)
and handed to bwrap as a sealed memfd per run.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import socket
from typing import Any

from .base import SandboxUnavailable

# Refused on every kernel that knows them; a name missing from this
# libseccomp's tables means the filter cannot be trusted, so it is an error.
REQUIRED_DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "timer_create",
    "timerfd_create",
    "signalfd",
    "signalfd4",
)

# Newer calls that older libseccomp releases may not know; refused when known.
OPTIONAL_DENIED = (
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "quotactl_fd",
)

# socket() and socketpair() succeed only for this family.
ALLOWED_SOCKET_FAMILY = socket.AF_UNIX


_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def _build_filter() -> object:
    try:
        import pyseccomp as seccomp
    except ImportError as exc:  # pragma: no cover - the dependency is pinned
        raise SandboxUnavailable(
            "pyseccomp is not importable; install it (pip install pyseccomp) and libseccomp2"
        ) from exc

    deny = seccomp.ERRNO(errno.EPERM)
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in ("socket", "socketpair"):
        flt.add_rule(deny, name, seccomp.Arg(0, seccomp.NE, ALLOWED_SOCKET_FAMILY))
    for name in REQUIRED_DENIED:
        try:
            flt.add_rule(deny, name)
        except (OSError, ValueError) as exc:
            raise SandboxUnavailable(f"libseccomp cannot filter {name!r}: {exc}") from exc
    for name in OPTIONAL_DENIED:
        try:
            flt.add_rule(deny, name)
        except (OSError, ValueError):
            continue
    return flt


@functools.cache
def filter_bpf() -> bytes:
    """The compiled filter (classic BPF), as bwrap's ``--seccomp`` expects it."""
    flt = _build_filter()
    fd = os.memfd_create("seccomp-build", os.MFD_CLOEXEC)
    with os.fdopen(fd, "w+b") as handle:
        flt.export_bpf(handle)  # type: ignore[attr-defined]
        handle.seek(0)
        program = handle.read()
    if not program or len(program) % 8:
        raise SandboxUnavailable("libseccomp produced an empty or malformed BPF program")
    return program


def filter_fd() -> int:
    """A fresh read-only memfd positioned at the start of the filter, for one run.

    bwrap reads the program from the descriptor's current offset, so runs
    must not share one; the caller closes it after the sandbox has started.
    """
    program = filter_bpf()
    fd = os.memfd_create("seccomp", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.write(fd, program)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def docker_profile() -> dict[str, Any]:
    """The same policy as a Docker seccomp profile (``--security-opt seccomp=FILE``)."""
    deny = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    only_unix = {"index": 0, "value": ALLOWED_SOCKET_FAMILY, "op": "SCMP_CMP_NE"}
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [
            {"names": list(REQUIRED_DENIED + OPTIONAL_DENIED), **deny},
            {"names": ["socket", "socketpair"], **deny, "args": [only_unix]},
        ],
    }
