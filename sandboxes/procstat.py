"""Reading sandboxed processes from outside: their memory and their CPU time.

The trusted grader reads a call's outputs straight out of the harness
process's memory with ``process_vm_readv`` (root may, over every user
namespace below its own), so the process inside spends nothing on handing
them over and cannot change them once read. CPU time per thread comes from
``/proc/<pid>/task/<tid>/schedstat`` (nanoseconds of run time, kept by the
kernel). Neither can be touched from inside the sandbox.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os


class MemoryReadError(Exception):
    """The range is not readable in that process (unmapped, or the process is gone)."""


class ProcessGone(MemoryReadError):
    """The process no longer exists (it exited, or a limit killed it)."""


class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_process_vm_readv = _libc.process_vm_readv
_process_vm_readv.restype = ctypes.c_ssize_t
_process_vm_readv.argtypes = [
    ctypes.c_int,
    ctypes.POINTER(_IoVec),
    ctypes.c_ulong,
    ctypes.POINTER(_IoVec),
    ctypes.c_ulong,
    ctypes.c_ulong,
]


def read_memory(pid: int, address: int, local_address: int, size: int) -> None:
    """Copy ``size`` bytes at ``address`` in process ``pid`` to ``local_address`` here
    (which the caller owns: a tensor's storage, a bytearray's buffer)."""
    if size == 0:
        return
    if address <= 0 or size < 0 or address + size > 2**64:
        raise MemoryReadError(f"{size} bytes at {address:#x} is not an address range")
    done = 0
    while done < size:
        local = _IoVec(local_address + done, size - done)
        remote = _IoVec(address + done, size - done)
        got = _process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            err = ctypes.get_errno()
            kind = ProcessGone if got < 0 and err == errno.ESRCH else MemoryReadError
            raise kind(
                f"cannot read {size - done} bytes at {address + done:#x} in process {pid}: "
                f"{os.strerror(err) if got < 0 else 'nothing read'}"
            )
        done += got


def thread_ids(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return []


def thread_cpu_s(pid: int, tid: int) -> float:
    """Run time of one thread so far; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as handle:
            return int(handle.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_by_thread(pids: list[int]) -> dict[tuple[int, int], float]:
    """Run time of every thread of these processes, keyed by (pid, tid)."""
    times: dict[tuple[int, int], float] = {}
    for pid in pids:
        for tid in thread_ids(pid):
            times[(pid, tid)] = thread_cpu_s(pid, tid)
    return times


def namespace_pid(host_pid: int) -> int | None:
    """The PID a process has in its own (innermost) PID namespace."""
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open(f"/proc/{host_pid}/status", encoding="ascii", errors="replace") as handle,
    ):
        for line in handle:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return None


def foreign_mappings(pid: int) -> list[tuple[int, int, str]]:
    """(start, end, name) of every mapping of a process that is not private anonymous
    memory: shared mappings, and mappings of a file or memfd even when private (their
    pages are the file's until written, so they can show what another mapping writes).
    A tensor's data lives in private anonymous memory (the heap, or unnamed mappings)."""
    found = []
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split(maxsplit=5)
                if len(fields) < 5:
                    continue
                name = fields[5].strip() if len(fields) > 5 else ""
                anonymous = not name or name in ("[heap]", "[stack]") or name.startswith("[anon")
                if anonymous and fields[1].endswith("p"):
                    continue
                low, _, high = fields[0].partition("-")
                found.append((int(low, 16), int(high, 16), name or "anonymous shared memory"))
    except (OSError, ValueError):
        return []
    return found


def mapping_ranges(pid: int) -> set[tuple[int, int]]:
    """(start, end) of every mapping of a process, as /proc/<pid>/maps lists them now
    (empty when it cannot be read)."""
    found = set()
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                low, _, rest = line.partition("-")
                high = rest.split(maxsplit=1)[0] if rest else ""
                found.add((int(low, 16), int(high, 16)))
    except (OSError, ValueError):
        return set()
    return found


def current_cpu() -> int:
    """The CPU the calling thread runs on now."""
    with open("/proc/thread-self/stat", "rb") as handle:
        return int(handle.read().rsplit(b")", 1)[1].split()[36])


def pin(pids: list[int], cpu: int) -> None:
    """Every thread of these processes onto ``cpu`` (threads and processes they start
    later inherit it)."""
    for pid in pids:
        for tid in thread_ids(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.sched_setaffinity(tid, {cpu})


def unpinned(pids: list[int], cpu: int) -> list[int]:
    """Threads of these processes allowed onto any CPU but ``cpu``."""
    moved = []
    for pid in pids:
        for tid in thread_ids(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                if os.sched_getaffinity(tid) != {cpu}:
                    moved.append(tid)
    return moved
