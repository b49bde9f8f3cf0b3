"""The channel between the trusted grader and a harness process, shared by both.

A message is ``[u64 length][u32 header length][header JSON][blob 0][blob 1]…``
where the header lists the blob sizes. Values travel as a JSON tree whose
tensor leaves point at raw little-endian buffers: nothing is ever unpickled,
and the trusted side rebuilds tensors only with ``torch.frombuffer`` after
checking dtype, shape and size. Everything a submission process sends is
hostile: ``decode_frame`` and ``unpack_tree`` raise ``ProtocolError`` on
anything malformed.

This module runs inside the sandbox too: it imports only the standard
library and torch, and other harness modules only relatively.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import torch

HARNESS_VERSION = "1.0.0"

MAX_HEADER_BYTES = 8 * 1024 * 1024
MAX_TREE_NODES = 100_000
MAX_TREE_DEPTH = 32
OUTPUT_SAMPLES = 64

_PREFIX = struct.Struct(">QI")

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


class ProtocolError(Exception):
    """A malformed message."""


# -- framing ----------------------------------------------------------------------


def encode_frame(header: dict[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> list[Any]:
    """The parts of one message, to be written in order."""
    sizes = [len(blob) if isinstance(blob, bytes) else blob.nbytes for blob in blobs]
    body = json.dumps({**header, "blobs": sizes}, separators=(",", ":")).encode()
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


def decode_frame(frame: memoryview) -> tuple[dict[str, Any], list[memoryview]]:
    """Split one complete frame (without its 8-byte length) into header and blobs."""
    if frame.nbytes < 4:
        raise ProtocolError("frame shorter than its header length")
    (header_len,) = struct.unpack(">I", frame[:4])
    if header_len > MAX_HEADER_BYTES or 4 + header_len > frame.nbytes:
        raise ProtocolError("header length out of range")
    try:
        header = json.loads(bytes(frame[4 : 4 + header_len]))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    sizes = header.get("blobs", [])
    if not isinstance(sizes, list) or not all(_is_count(size) for size in sizes):
        raise ProtocolError("blob sizes are not a list of counts")
    offset = 4 + header_len
    if offset + sum(sizes) != frame.nbytes:
        raise ProtocolError("blob sizes do not add up to the frame length")
    blobs = []
    for size in sizes:
        blobs.append(frame[offset : offset + size])
        offset += size
    return header, blobs


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# -- value trees ------------------------------------------------------------------


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The raw bytes of a tensor, moved to the CPU and made contiguous."""
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    if flat.numel() == 0:
        return memoryview(b"")
    return memoryview(flat.view(torch.uint8).numpy().data).cast("B")


def pack_tree(value: Any, blobs: list[memoryview], depth: int = 0) -> dict[str, Any]:
    """A JSON-able tree for ``value``; tensor bytes are appended to ``blobs``."""
    if depth > MAX_TREE_DEPTH:
        raise ProtocolError("value nested too deeply")
    if isinstance(value, torch.Tensor):
        dtype = DTYPE_NAMES.get(value.dtype)
        if dtype is None:
            raise ProtocolError(f"unsupported tensor dtype {value.dtype}")
        blobs.append(tensor_bytes(value))
        return {
            "k": "tensor",
            "dtype": dtype,
            "shape": list(value.shape),
            "device": value.device.type,
            "cls": f"{type(value).__module__}.{type(value).__qualname__}",
            "blob": len(blobs) - 1,
        }
    if value is None:
        return {"k": "none"}
    if isinstance(value, bool):
        return {"k": "bool", "v": value}
    if isinstance(value, int):
        return {"k": "int", "v": str(value)}
    if isinstance(value, float):
        return {"k": "float", "v": repr(value)}
    if isinstance(value, str):
        return {"k": "str", "v": value}
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


TensorFactory = Callable[[torch.dtype, list[int], memoryview], torch.Tensor]


def copy_tensor(dtype: torch.dtype, shape: list[int], data: memoryview) -> torch.Tensor:
    """A fresh, aligned CPU tensor holding ``data``."""
    tensor = torch.empty(shape, dtype=dtype)
    if data.readonly:
        data = memoryview(bytearray(data))
    if tensor.numel():
        tensor.reshape(-1).view(torch.uint8).copy_(torch.frombuffer(data, dtype=torch.uint8))
    return tensor


class _Unpacker:
    def __init__(self, blobs: Sequence[memoryview], factory: TensorFactory) -> None:
        self.blobs = blobs
        self.factory = factory
        self.nodes = 0

    def unpack(self, node: Any, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_TREE_NODES or depth > MAX_TREE_DEPTH:
            raise ProtocolError("value tree too large or too deep")
        if not isinstance(node, dict) or not isinstance(node.get("k"), str):
            raise ProtocolError("value node is not an object with a kind")
        kind = node["k"]
        if kind == "tensor":
            return self._tensor(node)
        if kind in ("list", "tuple"):
            items = [self.unpack(item, depth + 1) for item in _items(node)]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            pairs = [_pair(item) for item in _items(node)]
            return {self.unpack(k, depth + 1): self.unpack(v, depth + 1) for k, v in pairs}
        return _scalar(kind, node.get("v"))

    def _tensor(self, node: dict[str, Any]) -> torch.Tensor:
        dtype = DTYPES.get(node.get("dtype"))  # type: ignore[arg-type]
        shape = node.get("shape")
        blob = node.get("blob")
        if dtype is None:
            raise ProtocolError(f"unknown dtype {node.get('dtype')!r}")
        if (
            not isinstance(shape, list)
            or not all(_is_count(dim) for dim in shape)
            or len(shape) > 16
        ):
            raise ProtocolError("bad tensor shape")
        if not isinstance(blob, int) or isinstance(blob, bool) or not 0 <= blob < len(self.blobs):
            raise ProtocolError("bad blob index")
        data = self.blobs[blob]
        expected = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        if data.nbytes != expected:
            raise ProtocolError(
                f"tensor of shape {shape} {node['dtype']} needs {expected} bytes, got {data.nbytes}"
            )
        return self.factory(dtype, shape, data)


def _items(node: dict[str, Any]) -> list[Any]:
    items = node.get("items")
    if not isinstance(items, list):
        raise ProtocolError("container without items")
    return items


def _pair(item: Any) -> tuple[Any, Any]:
    if not isinstance(item, list) or len(item) != 2:
        raise ProtocolError("dict item is not a pair")
    return item[0], item[1]


def _scalar(kind: str, value: Any) -> Any:
    try:
        if kind == "none":
            return None
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "int" and isinstance(value, str) and len(value) < 400:
            return int(value)
        if kind == "float" and isinstance(value, str) and len(value) < 64:
            return float(value)
        if kind == "str" and isinstance(value, str):
            return value
        if kind == "dtype" and value in DTYPES:
            return DTYPES[value]
    except ValueError as exc:
        raise ProtocolError(f"bad {kind} value") from exc
    raise ProtocolError(f"bad value node of kind {kind!r}")


def unpack_tree(
    node: Any, blobs: Sequence[memoryview], factory: TensorFactory = copy_tensor
) -> Any:
    return _Unpacker(blobs, factory).unpack(node, 0)


def tree_tensors(node: Any) -> list[dict[str, Any]]:
    """The tensor leaves of a packed tree (the dicts), in order."""
    if not isinstance(node, dict):
        return []
    if node.get("k") == "tensor":
        return [node]
    found: list[dict[str, Any]] = []
    for item in node.get("items", []) if isinstance(node.get("items"), list) else []:
        children = item if isinstance(item, list) else [item]
        for child in children:
            found.extend(tree_tensors(child))
    return found


# -- output samples ---------------------------------------------------------------


def sample_positions(nonce: int, calls: int) -> torch.Tensor:
    """Raw positions (calls x SAMPLES) drawn from the batch's nonce."""
    generator = torch.Generator(device="cpu")
    generator.manual_seed(nonce % (2**63))
    return torch.randint(0, 2**62, (calls, OUTPUT_SAMPLES), generator=generator)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


def sample_output(value: Any, positions: torch.Tensor) -> list[torch.Tensor]:
    """Elements of every tensor in an output at the given raw positions.

    Taken right after each timed call, inside the timed window, so the values
    must exist by then; the grader later checks the full output against them.
    """
    samples = []
    for offset, leaf in enumerate(_leaves(value)):
        count = leaf.numel()
        if count == 0:
            samples.append(leaf.reshape(-1))
            continue
        index = (positions + offset) % count if offset else positions % count
        samples.append(leaf.reshape(-1)[index])
    return samples


def samples_match(value: Any, positions: torch.Tensor, samples: Any) -> bool:
    """Whether the samples a harness reported are the output's elements (trusted side)."""
    expected = sample_output(value, positions)
    if not isinstance(samples, list) or len(samples) != len(expected):
        return False
    for want, got in zip(expected, samples, strict=True):
        if not isinstance(got, torch.Tensor) or got.dtype != want.dtype or got.shape != want.shape:
            return False
        if want.numel() and not torch.equal(
            want.contiguous().view(torch.uint8), got.contiguous().view(torch.uint8)
        ):
            return False
    return True
