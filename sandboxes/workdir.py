"""The per-run writable storage: one size-capped tmpfs mounted on the host.

Why a host-side tmpfs (mounted by this process, which must be root) rather
than bwrap's own ``--size N --tmpfs``: the grader has to put files in before
the run and read files back after it, and a tmpfs made inside the sandbox's
mount namespace vanishes with the sandbox. A host directory on disk would
keep the files but not the cap: ``RLIMIT_FSIZE`` limits each file, not their
total. So each run mounts a fresh tmpfs with ``size=`` (bytes) and
``nr_inodes=`` (so millions of empty files cannot eat kernel memory either),
holding two directories that bwrap binds in: ``work`` (the work dir) and
``tmp`` (``/tmp``), which share the cap. After the run the files are read
back with every path component opened ``O_NOFOLLOW`` (the sandboxed code may
have planted symlinks or FIFOs), the tmpfs is unmounted and its mount point
removed. Pages written into it are charged to the writer's memory cgroup.

The sandbox runs as an unprivileged host uid, so everything it is given must
be reachable by that uid. The run directories sit in a state dir of mode 0711
(enter, never list) under names with 64 random bits; their ``work`` and
``tmp`` belong to the sandbox uid. A read-only source it cannot reach (the
interpreter under ``/root``, mode 0700) is bind-mounted once, read-only, into
``<state dir>/staging/`` and bound from there (``stage_for``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from .base import SandboxError, SandboxUnavailable
from .cgroups import NAME_PREFIX, pid_alive

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MNT_DETACH = 0x2
STATE_DIR_MODE = 0o711
STAGING = "staging"
BYTES_PER_INODE = 8192
MIN_INODES = 4096

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


# Bounds of the scan for the largest file (see TmpfsWorkdir.largest_file_bytes).
SCAN_MAX_DEPTH = 64
SCAN_MAX_ENTRIES = 200_000


def _mount(
    source: bytes, target: Path, fstype: bytes | None, flags: int, data: bytes | None
) -> None:
    if _libc.mount(source, os.fsencode(target), fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise SandboxUnavailable(f"cannot mount {source!r} on {target}: {os.strerror(err)}")


def _mount_tmpfs(target: Path, size_bytes: int) -> None:
    inodes = max(MIN_INODES, size_bytes // BYTES_PER_INODE)
    options = f"size={size_bytes},nr_inodes={inodes},mode=0755".encode()
    _mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV, options)


def make_state_dir(path: Path) -> None:
    """The directory that holds run directories and staged binds: root's, mode 0711."""
    path.mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
        raise SandboxUnavailable(f"{path} must be a directory owned by root")
    if stat.S_IMODE(info.st_mode) != STATE_DIR_MODE:
        path.chmod(STATE_DIR_MODE)


def reachable_by(path: str, uid: int, gid: int) -> bool:
    """Whether ``uid``/``gid`` (no supplementary groups, no ACLs) can reach and read ``path``."""
    current = Path(path)
    try:
        if not _allows(current.stat(), uid, gid, read=True):
            return False
        return all(_allows(parent.stat(), uid, gid, read=False) for parent in current.parents)
    except OSError:
        return False


def _allows(info: os.stat_result, uid: int, gid: int, *, read: bool) -> bool:
    shift = 6 if info.st_uid == uid else 3 if info.st_gid == gid else 0
    need = 0o1  # search
    if read:
        need = 0o5 if stat.S_ISDIR(info.st_mode) else 0o4
    return (info.st_mode >> shift) & need == need


def stage_for(source: str, state_dir: Path, uid: int, gid: int) -> str:
    """A path the sandbox uid can bind ``source`` from: ``source`` itself when reachable,
    otherwise a read-only bind of it in the staging dir (made once, then reused)."""
    if reachable_by(source, uid, gid):
        return source
    digest = hashlib.sha256(os.fsencode(source)).hexdigest()[:24]
    target = state_dir / STAGING / digest
    wanted = os.stat(source)
    (state_dir / STAGING).mkdir(mode=0o755, exist_ok=True)
    # Several grader processes on one host share the staging dir: one at a time looks
    # and mounts, so that two never stack binds on the same target.
    with open(state_dir / STAGING / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_mountpoint(target):
            seen = os.stat(target)
            if (seen.st_dev, seen.st_ino) == (wanted.st_dev, wanted.st_ino):
                return str(target)
            _unmount(target)
        if stat.S_ISDIR(wanted.st_mode):
            target.mkdir(mode=0o755, exist_ok=True)
        else:
            target.touch(mode=0o644, exist_ok=True)
        _mount(os.fsencode(source), target, None, MS_BIND, None)
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
        _mount(b"none", target, None, flags, None)
    return str(target)


def _unmount(target: Path) -> None:
    if _libc.umount2(os.fsencode(target), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOENT) and not is_mountpoint(target):
            return  # already unmounted (e.g. swept)
        raise SandboxError(f"cannot unmount {target}: {os.strerror(err)}")


def is_mountpoint(path: Path) -> bool:
    """Whether something is mounted on ``path``. ``os.path.ismount`` misses binds of a
    directory from the same filesystem, so this reads the mount table."""
    wanted = os.fsencode(os.path.realpath(path))
    with open("/proc/self/mountinfo", "rb") as handle:
        for line in handle:
            fields = line.split(b" ", 5)
            if len(fields) > 4 and _unescape(fields[4]) == wanted:
                return True
    return False


def _unescape(field: bytes) -> bytes:
    return re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), field)


def relative_path(name: str) -> PurePosixPath:
    """``name`` as a path inside the work dir; ValueError for anything that could leave it."""
    path = PurePosixPath(name)
    if not name or "\0" in name or path.is_absolute() or any(p in ("..", ".") for p in path.parts):
        raise ValueError(f"not a plain relative path inside the work dir: {name!r}")
    if not path.parts:
        raise ValueError(f"empty path: {name!r}")
    return path


class TmpfsWorkdir:
    """One run's tmpfs: ``work`` (bound at the work dir) and ``tmp`` (bound at /tmp)."""

    def __init__(
        self, base: Path, name: str, size_bytes: int, owner: tuple[int, int] | None = None
    ) -> None:
        """``owner`` (uid, gid) is who must own ``work`` and ``tmp`` on the host: the host
        uid the sandbox user maps to. None leaves them to root."""
        self.root = base / name
        self.size_bytes = size_bytes
        self.owner = owner
        self.work = self.root / "work"
        self.tmp = self.root / "tmp"
        self._mounted = False

    def create(self) -> None:
        make_state_dir(self.root.parent)
        self.root.mkdir(mode=0o755)
        _mount_tmpfs(self.root, self.size_bytes)
        self._mounted = True
        self.work.mkdir(mode=0o755)
        self.tmp.mkdir(mode=0o755)
        self._chown_tree()

    def write_files(self, files: Mapping[str, bytes]) -> None:
        """Write the run's input files; SandboxError if they do not fit the cap."""
        for name, data in files.items():
            target = self.work / relative_path(name)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
            except OSError as exc:
                raise SandboxError(f"cannot write {name!r} into the work dir: {exc}") from exc
        self._chown_tree()

    def _chown_tree(self) -> None:
        # Only ever called before the sandbox starts, on a tree this process made alone.
        if self.owner is None:
            return
        uid, gid = self.owner
        for top in (self.work, self.tmp):
            os.lchown(top, uid, gid)
            for dirpath, dirnames, filenames in os.walk(top):
                for entry in (*dirnames, *filenames):
                    os.lchown(os.path.join(dirpath, entry), uid, gid)

    def collect(self, names: Iterable[str]) -> dict[str, bytes]:
        """Regular files among ``names``; anything missing, a link or not a file is left out."""
        found: dict[str, bytes] = {}
        for name in names:
            data = self._read_regular(relative_path(name))
            if data is not None:
                found[name] = data
        return found

    def _read_regular(self, path: PurePosixPath) -> bytes | None:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            dir_fd = os.open(self.work, flags | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            for part in path.parts[:-1]:
                next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = next_fd
            fd = os.open(path.parts[-1], flags | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError:
            return None
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            return handle.read(self.size_bytes + 1)

    def largest_file_bytes(self) -> int:
        """Size of the largest regular file in the tmpfs (links are not followed).

        The code inside shapes this tree, so the walk is bounded: no recursion, at
        most ``SCAN_MAX_DEPTH`` levels and ``SCAN_MAX_ENTRIES`` entries. The file-size
        limit itself is the kernel's (``RLIMIT_FSIZE``); this only names it as the
        reason a run failed."""
        largest = 0
        budget = SCAN_MAX_ENTRIES
        for top in (self.work, self.tmp):
            pending = [(str(top), 0)]
            while pending and budget > 0:
                path, depth = pending.pop()
                try:
                    with os.scandir(path) as entries:
                        for entry in entries:
                            budget -= 1
                            if budget <= 0:
                                break
                            if entry.is_file(follow_symlinks=False):
                                largest = max(largest, entry.stat(follow_symlinks=False).st_size)
                            elif entry.is_dir(follow_symlinks=False) and depth < SCAN_MAX_DEPTH:
                                pending.append((entry.path, depth + 1))
                except OSError:
                    continue
        return largest

    def release(self) -> None:
        """Unmount the tmpfs (freeing its pages) and remove the mount point."""
        if self._mounted:
            _unmount(self.root)
            self._mounted = False
        with contextlib.suppress(FileNotFoundError):
            self.root.rmdir()


def sweep_stale(base: Path) -> None:
    """Unmount and remove run directories whose owning process is gone."""
    with contextlib.suppress(FileNotFoundError):
        for entry in base.iterdir():
            match = re.match(rf"{NAME_PREFIX}(\d+)-", entry.name)
            if match is None or pid_alive(int(match.group(1))):
                continue
            with contextlib.suppress(SandboxError, OSError):
                if is_mountpoint(entry):
                    _unmount(entry)
                shutil.rmtree(entry, ignore_errors=True)
