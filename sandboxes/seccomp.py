"""The seccomp filter every sandboxed process runs under, compiled to BPF.

Everything is allowed except what a grading job never needs and an escape
or a side channel would: network sockets (only ``AF_UNIX`` may be created, so
``multiprocessing`` and torch's shared-memory handles keep working; a run that
asks for ``network="loopback"`` may also create TCP/UDP sockets and route
netlink sockets, for its own private loopback interface: see
``NETWORK_FAMILIES``), tracing
other processes, the kernel keyring, io_uring (it bypasses this filter), eBPF,
perf events, mounting and namespaces, module loading and kexec, clock and
swap changes, and the timers and signal descriptors that can make the kernel do
work for a process while it is frozen (POSIX timers, timerfd, signalfd: a timer
expiring into a signalfd watched by many epoll sets costs milliseconds of
interrupt time, which is charged to whatever runs on that CPU, the reference
measured next), and the calls that read or evict the host's page cache
(``mincore``, ``cachestat``, ``posix_fadvise(DONTNEED)``, ``madvise(COLD or
PAGEOUT)``, ``preadv2``/``pwritev2`` with ``RWF_NOWAIT``): every sandbox reads
the same Python environment, and those calls made its cached pages a channel
from a sandbox holding hidden tests to a later one whose output is public.
Refused calls fail with ``EPERM``, which libraries handle as "not allowed"
instead of crashing.

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
    "mincore",
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
    "cachestat",
)

# Calls refused only with these arguments: (name, [(argument index, comparison, value,
# mask)]), every comparison of a rule holding. The page cache: evicting pages of
# files other sandboxes read, and reads that say whether a page was cached.
POSIX_FADV_DONTNEED = 4
MADV_COLD = 20
MADV_PAGEOUT = 21
RWF_NOWAIT = 0x8
DENIED_WITH: tuple[tuple[str, tuple[tuple[int, str, int, int], ...]], ...] = (
    ("fadvise64", ((3, "EQ", POSIX_FADV_DONTNEED, 0),)),
    ("madvise", ((2, "EQ", MADV_COLD, 0),)),
    ("madvise", ((2, "EQ", MADV_PAGEOUT, 0),)),
    ("preadv2", ((5, "MASKED_EQ", RWF_NOWAIT, RWF_NOWAIT),)),
    ("pwritev2", ((5, "MASKED_EQ", RWF_NOWAIT, RWF_NOWAIT),)),
)

# The socket families socket() accepts, by the run's network. "loopback" is for
# code that talks to itself over TCP, such as torch.distributed's gloo backend and
# its TCP store: IPv4 and IPv6, and route netlink, which getifaddrs() needs to find
# the interfaces. The sandbox's network namespace is its own, holding only its
# loopback interface, so such a socket reaches nothing outside the run; raw and
# packet sockets need CAP_NET_RAW, which the sandbox does not hold. socketpair()
# is allowed for AF_UNIX only, whatever the network.
NETWORK_FAMILIES: dict[str, tuple[int, ...]] = {
    "none": (socket.AF_UNIX,),
    "loopback": (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK),
}
NETLINK_ROUTE = 0  # the one netlink protocol a "loopback" run may open


def denied_families(allowed: tuple[int, ...]) -> tuple[list[int], int]:
    """The socket families to refuse, as (every refused value up to the largest
    allowed one, and the largest allowed one: every value above it is refused too).

    libseccomp ORs the rules given for one call and each compares one argument once,
    so "not one of these" is written as equalities below the top and one GT above it.
    The comparison is on all 64 bits: a family with high bits set is refused.
    """
    top = int(max(allowed))
    return [value for value in range(top) if value not in allowed], top


_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def _build_filter(network: str) -> object:
    try:
        import pyseccomp as seccomp
    except ImportError as exc:  # pragma: no cover - the dependency is pinned
        raise SandboxUnavailable(
            "pyseccomp is not importable; install it (pip install pyseccomp) and libseccomp2"
        ) from exc

    deny = seccomp.ERRNO(errno.EPERM)
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    families = _families(network)
    below, top = denied_families(families)
    for value in below:
        flt.add_rule(deny, "socket", seccomp.Arg(0, seccomp.EQ, value))
    flt.add_rule(deny, "socket", seccomp.Arg(0, seccomp.GT, top))
    if socket.AF_NETLINK in families:
        flt.add_rule(
            deny,
            "socket",
            seccomp.Arg(0, seccomp.EQ, socket.AF_NETLINK),
            seccomp.Arg(2, seccomp.NE, NETLINK_ROUTE),
        )
    flt.add_rule(deny, "socketpair", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    for name, comparisons in DENIED_WITH:
        args = []
        for index, op, value, mask in comparisons:
            if op == "MASKED_EQ":  # libseccomp takes the mask first
                args.append(seccomp.Arg(index, seccomp.MASKED_EQ, mask, value))
            else:
                args.append(seccomp.Arg(index, getattr(seccomp, op), value))
        flt.add_rule(deny, name, *args)
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


def _families(network: str) -> tuple[int, ...]:
    try:
        return NETWORK_FAMILIES[network]
    except KeyError:
        raise ValueError(
            f"unknown network {network!r}; known: {', '.join(NETWORK_FAMILIES)}"
        ) from None


@functools.cache
def filter_bpf(network: str = "none") -> bytes:
    """The compiled filter (classic BPF), as bwrap's ``--seccomp`` expects it."""
    flt = _build_filter(network)
    fd = os.memfd_create("seccomp-build", os.MFD_CLOEXEC)
    with os.fdopen(fd, "w+b") as handle:
        flt.export_bpf(handle)  # type: ignore[attr-defined]
        handle.seek(0)
        program = handle.read()
    if not program or len(program) % 8:
        raise SandboxUnavailable("libseccomp produced an empty or malformed BPF program")
    return program


def filter_fd(network: str = "none") -> int:
    """A fresh read-only memfd positioned at the start of the filter, for one run.

    bwrap reads the program from the descriptor's current offset, so runs
    must not share one; the caller closes it after the sandbox has started.
    """
    program = filter_bpf(network)
    fd = os.memfd_create("seccomp", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.write(fd, program)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def docker_profile(network: str = "none") -> dict[str, Any]:
    """The same policy as a Docker seccomp profile (``--security-opt seccomp=FILE``).
    Rules listed apart are ORed, and the conditions of one rule ANDed, as in libseccomp."""
    deny = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}

    def arg(index: int, op: str, value: int, mask: int = 0) -> dict[str, Any]:
        if op == "MASKED_EQ":  # Docker's value is the mask, valueTwo what must remain
            return {"index": index, "value": mask, "valueTwo": value, "op": f"SCMP_CMP_{op}"}
        return {"index": index, "value": value, "op": f"SCMP_CMP_{op}"}

    families = _families(network)
    below, top = denied_families(families)
    socket_rules = [[arg(0, "EQ", value)] for value in below] + [[arg(0, "GT", top)]]
    if socket.AF_NETLINK in families:
        socket_rules.append([arg(0, "EQ", socket.AF_NETLINK), arg(2, "NE", NETLINK_ROUTE)])
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [
            {"names": list(REQUIRED_DENIED + OPTIONAL_DENIED), **deny},
            *({"names": ["socket"], **deny, "args": args} for args in socket_rules),
            {"names": ["socketpair"], **deny, "args": [arg(0, "NE", socket.AF_UNIX)]},
            *(
                {"names": [name], **deny, "args": [arg(*c) for c in comparisons]}
                for name, comparisons in DENIED_WITH
            ),
        ],
    }
