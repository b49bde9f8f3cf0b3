"""Memory shared between the grader and one sandboxed process: the arena.

The grader writes each call's inputs into the arena just before the call and
reads them back afterwards (guard bands, inputs left unchanged); the process
inside sees it as file descriptor ``ARENA_FD`` and maps it. Only one call's
inputs are ever in it, so nothing in the sandbox can reach the inputs of
calls still to come: the grader holds those.

The grader only ever uses ``pread``/``pwrite`` on the arena, never a mapping
of its own: whatever the process inside does to the file (truncate it, grow
it, seal it), the grader gets short reads or a refused write, which are the
submission's failures, and never a SIGBUS.

Backends create it (``RunRequest.arena_bytes``): bwrap and the unsandboxed
runner as a sealed memfd (it can neither shrink nor grow, and takes no
further seals), Docker as a file on a host tmpfs bound into the container.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

# fcntl constants for memfd seals (linux/fcntl.h); not all Pythons export them.
F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
F_SEAL_SEAL = getattr(fcntl, "F_SEAL_SEAL", 0x0001)
F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 0x0002)
F_SEAL_GROW = getattr(fcntl, "F_SEAL_GROW", 0x0004)


class ArenaError(Exception):
    """The arena could not be read or written: the process inside changed it."""


class Arena:
    """One run's arena, as the grader sees it: a descriptor and positioned I/O."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    @classmethod
    def memfd(cls, size: int, name: str = "benchwright-arena") -> Arena:
        """A sparse memfd of ``size`` bytes that no one can resize or seal further."""
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, size)

    @classmethod
    def file(cls, path: str | os.PathLike[str], size: int, owner: tuple[int, int]) -> Arena:
        """A sparse file (for backends that cannot hand a descriptor to the sandbox)."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, size)
            os.fchown(fd, *owner)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, size)

    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        if offset < 0 or offset + view.nbytes > self.size:
            raise ValueError(f"{view.nbytes} bytes at {offset} do not fit an arena of {self.size}")
        while view.nbytes:
            try:
                written = os.pwrite(self.fd, view, offset)
            except OSError as exc:
                raise ArenaError(f"writing the arena failed: {exc}") from exc
            if written <= 0:
                raise ArenaError("writing the arena made no progress")
            view, offset = view[written:], offset + written

    def read(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ValueError(f"{size} bytes at {offset} are outside an arena of {self.size}")
        parts, left = [], size
        while left:
            try:
                chunk = os.pread(self.fd, left, offset)
            except OSError as exc:
                raise ArenaError(f"reading the arena failed: {exc}") from exc
            if not chunk:
                raise ArenaError(f"the arena ends before byte {offset}: it was truncated")
            parts.append(chunk)
            left -= len(chunk)
            offset += len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
