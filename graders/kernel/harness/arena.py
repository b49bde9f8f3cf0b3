"""The arena, as the harness sees it: the inputs of the current call.

The grader writes each call's inputs into the shared arena (fd ``ARENA_FD``)
right before the call, each tensor between two guard bands of sentinel
values, and sends their offsets. Tensors handed to the problem code are
views of this memory: nothing is copied on the way in, and the grader reads
the guard bands and the inputs back from its side after the call.

The mapping grows when a shape set needs more room; views are built once per
layout and rebuilt if the problem code changed one (``resize_``, ``t_``, …).
"""

from __future__ import annotations

import mmap
from typing import Any

import torch

from .protocol import DTYPES, ProtocolError

ARENA_FD = 5
_PAGE = mmap.PAGESIZE
_ITEM_SIZE = {dtype: torch.empty((), dtype=dtype).element_size() for dtype in DTYPES.values()}


class ArenaMap:
    def __init__(self, fd: int = ARENA_FD) -> None:
        self.fd = fd
        self.mapped = 0
        self.base: torch.Tensor | None = None
        self._maps: list[mmap.mmap] = []  # earlier, smaller mappings stay alive with their views
        self._views: dict[tuple[int, torch.dtype, tuple[int, ...], int], torch.Tensor] = {}
        self._made: dict[int, tuple[int, torch.dtype, tuple[int, ...], int]] = {}

    def ensure(self, size: int) -> None:
        """Map at least ``size`` bytes of the arena."""
        if size <= self.mapped:
            return
        length = max(_PAGE, 1 << (size - 1).bit_length())
        try:
            mapping = mmap.mmap(self.fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except (OSError, ValueError) as exc:
            raise ProtocolError(f"cannot map {length} bytes of the arena: {exc}") from None
        self._maps.append(mapping)
        self.base = torch.frombuffer(mapping, dtype=torch.uint8)
        self.mapped = length
        self._views.clear()
        self._made.clear()

    def tensor(self, dtype: torch.dtype, shape: list[int], offset: int) -> torch.Tensor:
        """A tensor over ``offset`` of the arena: a fresh view, or the cached one
        while it still has the layout it was made with."""
        item = _ITEM_SIZE[dtype]
        numel = 1
        for dim in shape:
            numel *= dim
        if offset % item:
            raise ProtocolError("arena tensor is not aligned")
        self.ensure(offset + numel * item)
        key = (offset, dtype, tuple(shape), numel)
        view = self._views.get(key)
        if view is None or not self._intact(view, key, numel):
            assert self.base is not None
            view = self.base[offset : offset + numel * item].view(dtype).view(shape)
            self._views[key] = view
            self._made[id(view)] = key
        return view

    def intact(self, tensors: list[torch.Tensor]) -> bool:
        """Whether these are views this map made and each still has the layout it was
        made with (the problem code may have resized or restrided one in place)."""
        for tensor in tensors:
            key = self._made.get(id(tensor))
            if key is None or self._views.get(key) is not tensor:
                return False
            if not self._intact(tensor, key, key[3]):
                return False
        return True

    def _intact(self, view: torch.Tensor, key: tuple[Any, ...], numel: int) -> bool:
        assert self.base is not None
        return (
            tuple(view.shape) == key[2]
            and view.is_contiguous()
            and view.numel() == numel
            and view.data_ptr() == self.base.data_ptr() + key[0]
        )

    def region(self, offset: int, size: int) -> torch.Tensor:
        """Raw bytes of the arena (a guarded region, for staging onto a device)."""
        self.ensure(offset + size)
        assert self.base is not None
        return self.base[offset : offset + size]

    def address_range(self) -> tuple[int, int]:
        """(first address, size) of the current mapping."""
        if self.base is None:
            return (0, 0)
        return (self.base.data_ptr(), self.mapped)
