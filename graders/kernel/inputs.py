"""Placing a call's inputs in a harness process's arena, and checking them afterwards.

The reference process generates inputs as packed trees (tensor bytes in
blobs). For each call the grader writes every tensor into the arena between
two guard bands of sentinel values (``pad_elements`` on each side), and sends
the harness the same tree with ``arena`` leaves in place of the blobs. After
the call it reads the guard bands back, and for KernelBench the inputs too:
whatever the process inside reports, these bytes are the grader's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sandboxes.arena import Arena

from .harness.protocol import (
    ALIGN,
    ITEM_SIZES,
    ProtocolError,
    check_tensor_node,
    is_count,
    pad_elements,
    sentinel_bytes,
    tensor_nbytes,
)


@dataclass
class Slot:
    """One input tensor's place in the arena."""

    offset: int  # of the tensor's first byte
    nbytes: int
    dtype: str
    pad: int  # sentinel elements on each side

    @property
    def pad_bytes(self) -> int:
        return self.pad * ITEM_SIZES[self.dtype]

    def guards(self) -> list[tuple[int, int]]:
        """(offset, size) of the guard band before and after the tensor."""
        return [
            (self.offset - self.pad_bytes, self.pad_bytes),
            (self.offset + self.nbytes, self.pad_bytes),
        ]


@dataclass
class Placed:
    """One call's inputs, laid out for the arena."""

    tree: dict[str, Any]  # what the harness gets: the inputs with arena leaves
    slots: list[Slot] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)  # each slot's bytes
    extent: int = 0

    @property
    def signature(self) -> tuple[tuple[int, int, str], ...]:
        return tuple((slot.offset, slot.nbytes, slot.dtype) for slot in self.slots)


def place(tree: Any, blobs: list[memoryview]) -> Placed:
    """Lay out a packed input tree (as ``generate`` sent it) in the arena."""
    placed = Placed(tree={})
    placed.tree = _place(tree, blobs, placed, 0)
    return placed


def _place(node: Any, blobs: list[memoryview], placed: Placed, depth: int) -> Any:
    if depth > 64 or not isinstance(node, dict):
        raise ProtocolError("malformed input tree")
    if node.get("k") == "tensor":
        check_tensor_node(node)
        blob = node.get("blob")
        if not is_count(blob) or blob >= len(blobs):
            raise ProtocolError("bad blob index")
        dtype, shape = node["dtype"], node["shape"]
        nbytes = tensor_nbytes(dtype, shape)
        if blobs[blob].nbytes != nbytes:
            raise ProtocolError("input blob of the wrong size")
        numel = nbytes // ITEM_SIZES[dtype]
        slot = Slot(offset=0, nbytes=nbytes, dtype=dtype, pad=pad_elements(numel))
        slot.offset = _align(placed.extent + slot.pad_bytes)
        placed.extent = slot.offset + nbytes + slot.pad_bytes
        placed.slots.append(slot)
        placed.data.append(bytes(blobs[blob]))
        return {
            "k": "arena",
            "dtype": dtype,
            "shape": shape,
            "offset": slot.offset,
            "pad": slot.pad,
        }
    if node.get("k") in ("list", "tuple"):
        return {**node, "items": [_place(item, blobs, placed, depth + 1) for item in node["items"]]}
    if node.get("k") == "dict":
        items = [[key, _place(value, blobs, placed, depth + 1)] for key, value in node["items"]]
        return {**node, "items": items}
    return node


def _align(offset: int) -> int:
    return (offset + ALIGN - 1) // ALIGN * ALIGN


@lru_cache(maxsize=64)
def _sentinels(dtype: str, pad: int) -> bytes:
    return sentinel_bytes(dtype, pad)


class ArenaInputs:
    """Writes placed inputs into one side's arena and checks them after a call."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.signature: tuple[tuple[int, int, str], ...] | None = None

    def write(self, placed: Placed) -> None:
        if placed.extent > self.arena.size:
            raise ProtocolError(
                f"a call's inputs need {placed.extent} bytes; the arena holds {self.arena.size}"
            )
        if placed.signature != self.signature:
            for slot in placed.slots:
                for offset, _size in slot.guards():
                    self.arena.write(offset, _sentinels(slot.dtype, slot.pad))
            self.signature = placed.signature
        for slot, data in zip(placed.slots, placed.data, strict=True):
            self.arena.write(slot.offset, data)

    def guards_intact(self, placed: Placed) -> bool:
        for slot in placed.slots:
            expected = _sentinels(slot.dtype, slot.pad)
            for offset, size in slot.guards():
                if self.arena.read(offset, size) != expected:
                    self.signature = None  # rewrite them before the next call
                    return False
        return True

    def unchanged(self, placed: Placed) -> bool:
        return all(
            self.arena.read(slot.offset, slot.nbytes) == data
            for slot, data in zip(placed.slots, placed.data, strict=True)
        )
