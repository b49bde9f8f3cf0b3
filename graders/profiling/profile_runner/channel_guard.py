"""The channel out of the program's reach.

The runner's thread answers the grader on the channel (commands on fd 3,
replies on fd 4). Code in the same process could write a reply of its own
there, a whole forged run with a trace that shows every window the grader
checks, and end the process before the runner answers. So the program's
thread, before any program code exists, loads a seccomp filter for itself
alone (a filter is per thread unless asked to synchronise, and the threads and
processes a filtered thread starts inherit it): on the channel's two
descriptors it refuses every call that reads, writes, sends, splices, copies,
duplicates, reconfigures, shuts down or closes, and it refuses outright the
calls that would give it the descriptor under another number (``sendmsg``
passes descriptors as ``SCM_RIGHTS``; ``pidfd_getfd``), write through
asynchronous I/O (``io_submit``; io_uring is refused to the whole sandbox),
close a range (``close_range``), or load a filter onto the runner's thread
(``seccomp``, ``prctl(PR_SET_SECCOMP)``: a synchronised filter of the
program's could pause the runner's writes). The channel is a pair of sockets
(``sandboxes.base.channel_pipe``), which ``/proc/self/fd/N`` cannot open
again. Refused calls fail with ``EPERM``.

Not closed by this: raw writes into the runner's memory (ctypes), the class
``graders/profiling/reprofile.py``'s docstring lists as out of an in-process
watch's reach; and the docker backend's channel, named FIFOs that a path
opens again.
"""

from __future__ import annotations

import errno
from typing import Any

import pyseccomp as seccomp

# harness.main's CHANNEL_IN_FD and CHANNEL_OUT_FD (sandboxes.base's, inside): written
# out here so that the guard imports nothing but libseccomp's binding, and can be
# tried on its own in a sandbox (tests/graders/profiling/test_channel_guard.py).
CHANNEL_FDS = (3, 4)
PR_SET_SECCOMP = 22

# Calls whose first argument is a descriptor.
ON_FIRST = (
    "read",
    "readv",
    "pread64",
    "preadv",
    "preadv2",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "write",
    "writev",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "sendto",
    "vmsplice",
    "dup",
    "fcntl",
    "ioctl",
    "setsockopt",
    "shutdown",
    "close",
)
# Calls with two descriptors: the indexes of their arguments.
ON_TWO = (
    ("sendfile", (0, 1)),
    ("splice", (0, 2)),
    ("tee", (0, 1)),
    ("copy_file_range", (0, 2)),
    ("dup2", (0, 1)),
    ("dup3", (0, 1)),
)
REFUSED = (
    "sendmsg",
    "sendmmsg",
    "pidfd_getfd",
    "close_range",
    "io_setup",
    "io_submit",
    "seccomp",
)


def channel_filter(fds: tuple[int, ...] = CHANNEL_FDS) -> Any:
    """The filter, not yet loaded. Every name must be known to this libseccomp: a
    call it cannot name is a call it cannot refuse."""
    deny = seccomp.ERRNO(errno.EPERM)
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    for fd in fds:
        for name in ON_FIRST:
            flt.add_rule(deny, name, seccomp.Arg(0, seccomp.EQ, fd))
        for name, indexes in ON_TWO:
            for index in indexes:
                flt.add_rule(deny, name, seccomp.Arg(index, seccomp.EQ, fd))
    for name in REFUSED:
        flt.add_rule(deny, name)
    flt.add_rule(deny, "prctl", seccomp.Arg(0, seccomp.EQ, PR_SET_SECCOMP))
    return flt


def guard_channel() -> None:
    """A job for the program's thread, its first: load the filter there."""
    channel_filter().load()
