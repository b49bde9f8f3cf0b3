"""The channel between the trusted grader and a harness process, shared by both.

A message is ``[u64 length][u32 header length][header JSON][blob 0][blob 1]…``
where the header lists the blob sizes. Values travel as a JSON tree whose
tensor leaves point at raw little-endian buffers: nothing is ever unpickled,
and the trusted side rebuilds tensors only from bytes after checking dtype,
shape and size. Everything a submission process sends is hostile:
``decode_frame`` and ``unpack_tree`` raise ``ProtocolError`` on anything
malformed, however it is malformed (too deep, too large, wrong types,
unhashable keys), and never anything else.

Tensor leaves come in three kinds:

- ``tensor``: bytes in a blob of the same message (inputs the reference
  generated, model weights, values for a task's own check);
- ``arena``: bytes at an offset of the arena, the memory the grader shares
  with one harness process (``sandboxes/arena.py``), between guard bands of
  ``pad`` elements on each side: a call's inputs;
- ``mem``: a call's output, left where it is in the harness process's memory
  (``addr``, ``nbytes``) for the grader to read from outside.

A value the harness will not describe (a tensor subclass, a container
subclass, an object of some other type) travels as ``opaque`` with its type's
name, for the grader's report.

This module runs inside the sandbox too: it imports only the standard
library and torch, and other harness modules only relatively.
"""

from __future__ import annotations

import json
import json.encoder
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import torch

HARNESS_VERSION = "2.3.0"

MAX_HEADER_BYTES = 8 * 1024 * 1024
MAX_TREE_NODES = 100_000
MAX_TREE_DEPTH = 32
MAX_DIMS = 16
# Arena layout: tensors start on cache-line boundaries.
ALIGN = 64

_PREFIX = struct.Struct(">QI")
_loads = json.loads


def _unencodable(value: Any) -> Any:
    raise TypeError(f"a message cannot carry a {type(value).__name__}")


# JSON encoding by json's C encoder, made when this module is imported: the same text as
# ``json.dumps(..., separators=(",", ":"))``, but a program that later replaces
# ``json.dumps`` or anything json's Python code looks up runs nothing inside a reply.
_encoder = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None,
    _unencodable,
    json.encoder.c_encode_basestring_ascii,  # type: ignore[attr-defined]
    None,
    ":",
    ",",
    False,
    False,
    True,
)
_join = "".join

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)
DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
ITEM_SIZES = {name: torch.empty((), dtype=dtype).element_size() for name, dtype in DTYPES.items()}
SCALAR_KINDS = ("none", "bool", "int", "float", "str")


class ProtocolError(Exception):
    """A malformed message."""


# -- framing ----------------------------------------------------------------------


def encode_frame(header: dict[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> list[Any]:
    """The parts of one message, to be written in order."""
    sizes = [len(blob) if isinstance(blob, bytes) else blob.nbytes for blob in blobs]
    body = _join(_encoder({**header, "blobs": sizes}, 0)).encode()
    total = 4 + len(body) + sum(sizes)
    return [_PREFIX.pack(total, len(body)), body, *blobs]


def frame_bytes(header: dict[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> bytes:
    return b"".join(bytes(part) for part in encode_frame(header, blobs))


def frame_length(prefix: bytes | bytearray | memoryview) -> int:
    """Bytes after the 8-byte length field, from the first 12 bytes of a frame."""
    total, header_len = _PREFIX.unpack(bytes(prefix[: _PREFIX.size]))
    if header_len > MAX_HEADER_BYTES or header_len + 4 > total:
        raise ProtocolError(f"bad frame prefix (length {total}, header {header_len})")
    return int(total)


def decode_frame(
    frame: memoryview, trusted: bool = False
) -> tuple[dict[str, Any], list[memoryview]]:
    """Split one complete frame (without its 8-byte length) into header and blobs.

    ``trusted``: the frame comes from the grader (the harness reading its commands),
    so the header is parsed without the bounds that frames from a sandbox need."""
    if frame.nbytes < 4:
        raise ProtocolError("frame shorter than its header length")
    (header_len,) = struct.unpack(">I", frame[:4])
    if header_len > MAX_HEADER_BYTES or 4 + header_len > frame.nbytes:
        raise ProtocolError("header length out of range")
    raw = bytes(frame[4 : 4 + header_len])
    header = _loads(raw) if trusted else _parse_json(raw)
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    sizes = header.get("blobs", [])
    if not isinstance(sizes, list) or not all(is_count(size) for size in sizes):
        raise ProtocolError("blob sizes are not a list of counts")
    offset = 4 + header_len
    if offset + sum(sizes) != frame.nbytes:
        raise ProtocolError("blob sizes do not add up to the frame length")
    blobs = []
    for size in sizes:
        blobs.append(frame[offset : offset + size])
        offset += size
    return header, blobs


def _parse_json(raw: bytes) -> Any:
    # Nesting is bounded before parsing: the C parser recurses once per level. The
    # number of opening brackets bounds the depth; only when it is large is the depth
    # itself measured (brackets inside strings over-count, which errs on the safe side).
    limit = 4 * MAX_TREE_DEPTH + 16
    if raw.count(b"[") + raw.count(b"{") > limit:
        depth = most = 0
        for byte in raw:
            if byte in (0x5B, 0x7B):  # [ {
                depth += 1
                most = max(most, depth)
            elif byte in (0x5D, 0x7D):  # ] }
                depth -= 1
        if most > limit:
            raise ProtocolError(f"header nested {most} levels deep")
    try:
        return json.loads(raw, object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ProtocolError(f"header is not JSON: {exc}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key appears twice: parsers disagree on which one
    counts, and a reply must mean one thing."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("a key appears twice in one object")
    return obj


def is_count(value: Any) -> TypeGuard[int]:
    return type(value) is int and value >= 0


def is_number(value: Any) -> TypeGuard[int | float]:
    """A finite float, or an int a float can hold (``math.isfinite`` overflows on more)."""
    if type(value) is int:
        return -(2**63) <= value < 2**63
    return type(value) is float and math.isfinite(value)


# -- value trees ------------------------------------------------------------------


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The raw bytes of a tensor, moved to the CPU and made contiguous."""
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    if flat.numel() == 0:
        return memoryview(b"")
    return memoryview(flat.view(torch.uint8).numpy().data).cast("B")


def pack_tree(value: Any, blobs: list[memoryview], depth: int = 0) -> dict[str, Any]:
    """A JSON-able tree for ``value``; tensor bytes are appended to ``blobs``.

    Used for values of trusted code (the reference's inputs and weights, the
    grader's own): the submission's outputs are described by the harness
    instead (``outputs.describe``), and never packed with their own methods.
    """
    if depth > MAX_TREE_DEPTH:
        raise ProtocolError("value nested too deeply")
    if isinstance(value, torch.Tensor):
        dtype = DTYPE_NAMES.get(value.dtype)
        if dtype is None:
            raise ProtocolError(f"unsupported tensor dtype {value.dtype}")
        blobs.append(tensor_bytes(value))
        return {"k": "tensor", "dtype": dtype, "shape": list(value.shape), "blob": len(blobs) - 1}
    if value is None:
        return {"k": "none"}
    if isinstance(value, bool):
        return {"k": "bool", "v": bool(value)}
    if isinstance(value, int):
        return {"k": "int", "v": str(int(value))}
    if isinstance(value, float):
        return {"k": "float", "v": repr(float(value))}
    if isinstance(value, str):
        return {"k": "str", "v": str(value)}
    if isinstance(value, torch.dtype):
        return {"k": "dtype", "v": DTYPE_NAMES.get(value, str(value))}
    if isinstance(value, tuple | list):
        kind = "list" if isinstance(value, list) else "tuple"
        return {"k": kind, "items": [pack_tree(item, blobs, depth + 1) for item in value]}
    if isinstance(value, dict):
        items = [
            [pack_tree(k, blobs, depth + 1), pack_tree(v, blobs, depth + 1)]
            for k, v in value.items()
        ]
        return {"k": "dict", "items": items}
    raise ProtocolError(f"cannot send a value of type {type(value).__name__}")


def pack_scalar(value: Any) -> dict[str, Any] | None:
    """The node of a plain scalar of exactly a builtin type (or a dtype), or None."""
    kind = type(value)
    if value is None:
        return {"k": "none"}
    if kind is bool:
        return {"k": "bool", "v": value}
    if kind is int:
        return {"k": "int", "v": str(value)}
    if kind is float:
        return {"k": "float", "v": repr(value)}
    if kind is str:
        return {"k": "str", "v": value}
    if kind is torch.dtype:
        return {"k": "dtype", "v": DTYPE_NAMES.get(value, str(value))}
    return None


TensorFactory = Callable[[torch.dtype, list[int], memoryview], torch.Tensor]
ArenaFactory = Callable[[torch.dtype, list[int], int, int], torch.Tensor]


def copy_tensor(dtype: torch.dtype, shape: list[int], data: memoryview) -> torch.Tensor:
    """A fresh, aligned CPU tensor holding ``data``."""
    tensor = torch.empty(shape, dtype=dtype)
    if data.readonly:
        data = memoryview(bytearray(data))
    if tensor.numel():
        tensor.reshape(-1).view(torch.uint8).copy_(torch.frombuffer(data, dtype=torch.uint8))
    return tensor


def tensor_nbytes(dtype_name: str, shape: list[int]) -> int:
    return math.prod(shape) * ITEM_SIZES[dtype_name]


def check_tensor_node(node: dict[str, Any]) -> tuple[torch.dtype, list[int]]:
    """The dtype and shape of a tensor-like leaf, or ProtocolError."""
    name = node.get("dtype")
    dtype = DTYPES.get(name) if isinstance(name, str) else None
    shape = node.get("shape")
    if dtype is None:
        raise ProtocolError(f"unknown dtype {str(node.get('dtype'))[:40]!r}")
    if not isinstance(shape, list) or not all(is_count(d) for d in shape) or len(shape) > MAX_DIMS:
        raise ProtocolError("bad tensor shape")
    # An empty tensor's other dimensions still size its strides: bound them too.
    if math.prod(max(dim, 1) for dim in shape) > 2**48:
        raise ProtocolError("tensor too large")
    return dtype, shape


class TreeWalker:
    """Bounded walk over a received tree: node count and depth, container shapes,
    scalar leaves. Subclasses say what a tensor-like leaf becomes."""

    leaf_kinds: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.nodes = 0

    def unpack(self, node: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > MAX_TREE_NODES or depth > MAX_TREE_DEPTH:
            raise ProtocolError("value tree too large or too deep")
        if type(node) is not dict or type(node.get("k")) is not str:
            raise ProtocolError("value node is not an object with a kind")
        kind = node["k"]
        if kind in self.leaf_kinds:
            return self.leaf(node)
        if kind in ("list", "tuple"):
            items = [self.unpack(item, depth + 1) for item in _items(node)]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            result = {}
            for item in _items(node):
                key_node, value_node = _pair(item)
                if type(key_node) is not dict or key_node.get("k") not in SCALAR_KINDS:
                    raise ProtocolError("dict key is not a plain scalar")
                key = self.unpack(key_node, depth + 1)
                try:
                    seen = key in result
                except TypeError:  # unhashable: a NaN-free scalar never is, but be sure
                    raise ProtocolError("dict key is not hashable") from None
                if seen:
                    raise ProtocolError(f"dict key {key!r:.40} appears twice")
                result[key] = self.unpack(value_node, depth + 1)
            return result
        return _scalar(kind, node.get("v"))

    def leaf(self, node: dict[str, Any]) -> Any:
        raise ProtocolError(f"unexpected {node['k']} node")


class _Unpacker(TreeWalker):
    leaf_kinds = ("tensor", "arena")

    def __init__(
        self,
        blobs: Sequence[memoryview],
        factory: TensorFactory,
        arena: ArenaFactory | None,
    ) -> None:
        super().__init__()
        self.blobs = blobs
        self.factory = factory
        self.arena = arena

    def leaf(self, node: dict[str, Any]) -> torch.Tensor:
        dtype, shape = check_tensor_node(node)
        if node["k"] == "arena":
            offset, pad = node.get("offset"), node.get("pad", 0)
            if self.arena is None or not is_count(offset) or not is_count(pad):
                raise ProtocolError("bad arena tensor")
            return self.arena(dtype, shape, offset, pad)
        blob = node.get("blob")
        if not is_count(blob) or blob >= len(self.blobs):
            raise ProtocolError("bad blob index")
        data = self.blobs[blob]
        expected = tensor_nbytes(node["dtype"], shape)
        if data.nbytes != expected:
            raise ProtocolError(
                f"tensor of shape {shape} {node['dtype']} needs {expected} bytes, got {data.nbytes}"
            )
        return self.factory(dtype, shape, data)


def _items(node: dict[str, Any]) -> list[Any]:
    items = node.get("items")
    if type(items) is not list:
        raise ProtocolError("container without items")
    return items


def _pair(item: Any) -> tuple[Any, Any]:
    if type(item) is not list or len(item) != 2:
        raise ProtocolError("dict item is not a pair")
    return item[0], item[1]


def _scalar(kind: str, value: Any) -> Any:
    try:
        if kind == "none":
            return None
        if kind == "bool" and type(value) is bool:
            return value
        if kind == "int" and type(value) is str and len(value) < 400:
            return int(value)
        if kind == "float" and type(value) is str and len(value) < 64:
            return float(value)
        if kind == "str" and type(value) is str:
            return value
        if kind == "dtype" and type(value) is str and value in DTYPES:
            return DTYPES[value]
    except ValueError as exc:
        raise ProtocolError(f"bad {kind} value") from exc
    raise ProtocolError(f"bad value node of kind {kind[:40]!r}")


def unpack_tree(
    node: Any,
    blobs: Sequence[memoryview],
    factory: TensorFactory = copy_tensor,
    arena: ArenaFactory | None = None,
) -> Any:
    return _Unpacker(blobs, factory, arena).unpack(node)


def tree_tensors(node: Any) -> list[dict[str, Any]]:
    """The tensor-like leaves of a tree (the dicts), in order."""
    if not isinstance(node, dict):
        return []
    if node.get("k") in ("tensor", "arena", "mem"):
        return [node]
    found: list[dict[str, Any]] = []
    for item in node.get("items", []) if isinstance(node.get("items"), list) else []:
        children = item if isinstance(item, list) else [item]
        for child in children:
            found.extend(tree_tensors(child))
    return found


# -- guard bands ------------------------------------------------------------------


def pad_elements(numel: int) -> int:
    """Sentinel elements on each side of an input in the arena."""
    return min(max(1024, numel // 64), 1 << 22)


def sentinel_bytes(dtype_name: str, count: int) -> bytes:
    """``count`` elements of the dtype's sentinel: NaN for floats, the largest value for
    integers, True for bools. Reading one poisons a result; writing one shows."""
    dtype = DTYPES[dtype_name]
    if dtype.is_floating_point or dtype.is_complex:
        value: Any = float("nan")
    elif dtype == torch.bool:
        value = True
    else:
        value = torch.iinfo(dtype).max
    return torch.full((count,), value, dtype=dtype).view(torch.uint8).numpy().tobytes()
