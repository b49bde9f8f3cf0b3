"""Reading a call's output out of a harness process, on the trusted side.

The harness answers a call with a description of its output: containers and
scalars as they are, each tensor as ``mem`` (dtype, shape, and where its
bytes are), anything else as ``opaque``. The grader checks the description
with bounds (nodes, depth, dims, a byte budget), then copies each tensor's
bytes out of the process's memory into a tensor of its own. What is read is
what the call produced, whatever the process claims about it; a description
that does not hold together, or an address the process does not own, is the
submission's failure.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from sandboxes.procstat import MemoryReadError, ProcessGone, read_memory

from .harness.protocol import (
    ProtocolError,
    TreeWalker,
    check_tensor_node,
    is_count,
    tensor_nbytes,
)

_memcmp = ctypes.CDLL(None).memcmp
_memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_memcmp.restype = ctypes.c_int


class OutputTooLarge(ProtocolError):
    """The output's tensors add up to more bytes than the budget allows."""


class OutputUnusable(ProtocolError):
    """A tensor whose shape the grader cannot build (it cannot be the right answer)."""


@dataclass
class Opaque:
    """A value the harness would not describe: a subclass or a foreign object."""

    cls: str
    what: str  # tensor, container or value


@dataclass
class OutputInfo:
    """Where a call's tensors lived in the harness process (for aliasing checks)."""

    storages: list[tuple[int, int]] = field(default_factory=list)  # as the harness reports them
    read: list[tuple[int, int]] = field(default_factory=list)  # where the grader read the bytes
    nbytes: int = 0
    copies: list[torch.Tensor] = field(default_factory=list)  # what was read, per ``read``


Reader = Callable[[int, int, int], None]  # (address there, address here, size)


class _OutputWalker(TreeWalker):
    leaf_kinds = ("mem", "opaque")

    def __init__(self, read: Reader, cap_bytes: int) -> None:
        super().__init__()
        self.read = read
        self.cap = cap_bytes
        self.info = OutputInfo()

    def leaf(self, node: dict[str, Any]) -> Any:
        if node["k"] == "opaque":
            cls, what = node.get("cls"), node.get("what")
            return Opaque(
                cls=cls[:200] if isinstance(cls, str) else "?",
                what=what if what in ("tensor", "container", "value") else "value",
            )
        try:
            dtype, shape = check_tensor_node(node)
        except ProtocolError as exc:
            if isinstance(node.get("shape"), list) and all(map(is_count, node["shape"])):
                raise OutputUnusable(f"a tensor of shape {node['shape'][:6]}: {exc}") from None
            raise
        nbytes, addr = node.get("nbytes"), node.get("addr")
        storage = node.get("storage")
        if nbytes != tensor_nbytes(node["dtype"], shape) or not is_count(addr):
            raise ProtocolError("a tensor's size or address does not add up")
        if not (isinstance(storage, list) and len(storage) == 2 and all(map(is_count, storage))):
            raise ProtocolError("a tensor's storage is not (address, size)")
        if not isinstance(node.get("device"), str):
            raise ProtocolError("a tensor without a device")
        self.info.nbytes += nbytes
        if self.info.nbytes > self.cap:
            raise OutputTooLarge(f"the output holds more than {self.cap} bytes")
        try:
            tensor = torch.empty(shape, dtype=dtype)
        except (RuntimeError, ValueError) as exc:  # e.g. empty, but its strides overflow
            raise OutputUnusable(f"a tensor of shape {shape[:6]}: {exc}") from None
        if nbytes:
            self.read(addr, tensor.data_ptr(), nbytes)
        self.info.storages.append((storage[0], storage[1]))
        self.info.read.append((addr, nbytes))
        self.info.copies.append(tensor)
        return tensor


def read_output(tree: Any, pid: int, cap_bytes: int) -> tuple[Any, OutputInfo]:
    """The value a call returned, rebuilt here from the process's memory."""

    def read(address: int, local: int, size: int) -> None:
        try:
            read_memory(pid, address, local, size)
        except ProcessGone:
            raise
        except MemoryReadError as exc:
            raise ProtocolError(f"its output cannot be read: {exc}") from None

    walker = _OutputWalker(read, cap_bytes)
    return walker.unpack(tree), walker.info


def changed_since_read(info: OutputInfo, pid: int) -> bool:
    """Whether any byte read for an output is different in the process now (read
    again, compared byte for byte; memory the process no longer maps has changed)."""
    for (address, nbytes), copy in zip(info.read, info.copies, strict=True):
        if not nbytes:
            continue
        now = torch.empty(nbytes, dtype=torch.uint8)
        try:
            read_memory(pid, address, now.data_ptr(), nbytes)
        except MemoryReadError:
            return True
        if _memcmp(now.data_ptr(), copy.data_ptr(), nbytes) != 0:
            return True
    return False


def overlaps(first: tuple[int, int], second: tuple[int, int]) -> bool:
    """Whether two (address, size) ranges share a byte."""
    (a, a_size), (b, b_size) = first, second
    return a_size > 0 and b_size > 0 and a < b + b_size and b < a + a_size
