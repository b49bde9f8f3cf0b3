"""The grader <-> harness channel: framing and value trees, against hostile bytes.

Nothing from a submission's process is unpickled: values are JSON trees whose
tensors are rebuilt from raw bytes after their dtype, shape and size check out.
Whatever the bytes, decoding raises ProtocolError and nothing else (fuzzed
below with random and adversarial frames).
"""

from __future__ import annotations

import contextlib
import json
import math
import pickle
import struct
from typing import Any

import pytest
import torch

from graders.kernel.compare import Comparison, compare_outputs
from graders.kernel.harness.protocol import (
    MAX_TREE_DEPTH,
    ProtocolError,
    decode_frame,
    frame_bytes,
    frame_length,
    is_number,
    pack_tree,
    unpack_tree,
)
from graders.kernel.spec import Tolerance


def round_trip(value: Any) -> Any:
    blobs: list[memoryview] = []
    tree = pack_tree(value, blobs)
    header, received = decode_frame(memoryview(frame_bytes({"value": tree}, blobs))[8:])
    return unpack_tree(header["value"], received)


def test_nested_values_survive_the_channel() -> None:
    value: dict[str, Any] = {
        "x": torch.randn(3, 4).t(),  # not contiguous: travels as values
        "half": torch.randn(5, dtype=torch.bfloat16),
        "mask": torch.tensor([True, False]),
        "empty": torch.empty(0, 7),
        "scalars": (1, 2.5, float("nan"), None, "name", torch.float16, 2**70),
    }
    back = round_trip(value)
    assert isinstance(back, dict) and isinstance(value, dict)
    assert torch.equal(back["x"], value["x"]) and back["x"].is_contiguous()
    assert torch.equal(back["half"], value["half"])
    assert torch.equal(back["mask"], value["mask"])
    assert back["empty"].shape == (0, 7)
    one, two_and_half, nan, none, name, dtype, big = back["scalars"]
    assert (one, two_and_half, none, name, dtype, big) == (
        1,
        2.5,
        None,
        "name",
        torch.float16,
        2**70,
    )
    assert math.isnan(nan)


def frame_with(tree: object, blobs: list[bytes]) -> memoryview:
    return memoryview(frame_bytes({"value": tree}, blobs))[8:]


@pytest.mark.parametrize(
    ("tree", "blobs", "message"),
    [
        (
            {"k": "tensor", "dtype": "float32", "shape": [4], "blob": 0},
            [b"\0" * 12],
            "needs 16 bytes",
        ),
        ({"k": "tensor", "dtype": "object", "shape": [1], "blob": 0}, [b"\0" * 8], "unknown dtype"),
        (
            {"k": "tensor", "dtype": "float32", "shape": [1], "blob": 3},
            [b"\0" * 4],
            "bad blob index",
        ),
        ({"k": "tensor", "dtype": "float32", "shape": [-1], "blob": 0}, [b""], "bad tensor shape"),
        ({"k": "pickle", "v": pickle.dumps(1).hex()}, [], "bad value node"),
        ({"k": "int", "v": 5}, [], "bad value node"),
        ({"k": "list"}, [], "container without items"),
        ("not a node", [], "not an object"),
    ],
)
def test_malformed_trees_are_refused(tree: object, blobs: list[bytes], message: str) -> None:
    header, received = decode_frame(frame_with(tree, blobs))
    with pytest.raises(ProtocolError, match=message):
        unpack_tree(header["value"], received)


def test_deep_nesting_is_refused() -> None:
    tree: dict = {"k": "none"}
    for _ in range(MAX_TREE_DEPTH + 2):
        tree = {"k": "list", "items": [tree]}
    with pytest.raises(ProtocolError, match="too large or too deep"):
        unpack_tree(tree, [])


def test_frames_whose_sizes_do_not_add_up_are_refused() -> None:
    body = json.dumps({"op": "done", "blobs": [10]}).encode()
    frame = struct.pack(">I", len(body)) + body + b"\0" * 3
    with pytest.raises(ProtocolError, match="do not add up"):
        decode_frame(memoryview(frame))
    with pytest.raises(ProtocolError, match="not JSON"):
        decode_frame(memoryview(struct.pack(">I", 3) + b"{{{"))
    with pytest.raises(ProtocolError, match="bad frame prefix"):
        frame_length(struct.pack(">QI", 10, 2**31))


TIGHT = Tolerance(1e-5, 1e-5)


def compare(ref: object, sub: object) -> Comparison:
    ref_tree, sub_tree = pack_tree(ref, []), pack_tree(sub, [])
    return compare_outputs(ref_tree, ref, sub_tree, sub, lambda _: TIGHT)


def test_comparison_applies_atol_and_rtol() -> None:
    ref = torch.tensor([1.0, 100.0, 0.0])
    assert compare(ref, ref + torch.tensor([1e-6, 1e-3, 0.0])).ok
    result = compare(ref, ref + torch.tensor([0.0, 0.01, 0.0]))
    assert not result.ok
    assert "at 1 of 3 elements" in result.message
    assert result.max_abs_error == pytest.approx(0.01, rel=1e-3)


def test_comparison_needs_nan_and_infinities_to_match() -> None:
    ref = torch.tensor([float("nan"), float("inf"), 1.0])
    assert compare(ref, ref.clone()).ok
    assert not compare(ref, torch.tensor([0.0, float("inf"), 1.0])).ok
    assert not compare(ref, torch.tensor([float("nan"), float("-inf"), 1.0])).ok


def test_comparison_checks_structure_dtype_and_subclass() -> None:
    ref = torch.zeros(2, 3)
    assert "has dtype float64" in compare(ref, ref.double()).message
    assert "has shape [3, 2]" in compare(ref, ref.t().contiguous()).message
    assert "the reference returns a float32 tensor" in compare(ref, (ref,)).message
    assert "has 1 items" in compare((ref, ref), (ref,)).message
    opaque = {"k": "opaque", "what": "tensor", "cls": "solution.Lazy"}
    result = compare_outputs(pack_tree(ref, []), ref, opaque, None, lambda _: Tolerance(0, 0))
    assert (
        result.integrity
        == "output is a solution.Lazy (a torch.Tensor subclass), not a plain torch.Tensor"
    )
    listed = {"k": "opaque", "what": "container", "cls": "solution.Sneaky"}
    result = compare_outputs(pack_tree((ref,), []), (ref,), listed, None, lambda _: TIGHT)
    assert result.integrity == "output is a solution.Sneaky (a subclass), not a plain tuple or list"


# -- hostile frames ---------------------------------------------------------------------


def test_dict_keys_must_be_plain_scalars() -> None:
    unhashable = {"k": "dict", "items": [[{"k": "list", "items": []}, {"k": "none"}]]}
    with pytest.raises(ProtocolError, match="dict key is not a plain scalar"):
        unpack_tree(unhashable, [])
    fine = {"k": "dict", "items": [[{"k": "str", "v": "a"}, {"k": "int", "v": "1"}]]}
    assert unpack_tree(fine, []) == {"a": 1}


def test_a_key_twice_is_refused_in_headers_and_in_dicts() -> None:
    # Parsers disagree on which duplicate counts: a reply must mean one thing.
    twice = b'{"time":0.001,"time":2}'
    with pytest.raises(ProtocolError, match="appears twice"):
        decode_frame(memoryview(struct.pack(">I", len(twice)) + twice))
    key = {"k": "str", "v": "y"}
    with pytest.raises(ProtocolError, match="'y' appears twice"):
        unpack_tree({"k": "dict", "items": [[key, {"k": "none"}], [key, {"k": "none"}]]}, [])


def test_numbers_a_float_cannot_hold_are_not_numbers() -> None:
    assert is_number(3) and is_number(0.5) and is_number(-(2**63))
    assert not is_number(10**400) and not is_number(2**63)
    assert not is_number(math.inf) and not is_number(math.nan) and not is_number(True)


def test_deeply_nested_headers_are_refused_before_parsing() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ProtocolError, match="nested"):
        decode_frame(memoryview(struct.pack(">I", len(deep)) + deep))
    deep_object = b'{"a":' * 50_000 + b"1" + b"}" * 50_000
    with pytest.raises(ProtocolError, match="nested"):
        decode_frame(memoryview(struct.pack(">I", len(deep_object)) + deep_object))


def _decode_everything(frame: bytes) -> None:
    """What the grader does with a reply: decode the frame, then every tree in it."""
    if len(frame) >= 12:
        frame_length(frame[:12])
    header, blobs = decode_frame(memoryview(frame))
    for value in header.values():
        unpack_tree(value, blobs)


def _mutations(seed: int) -> list[bytes]:
    import random

    rng = random.Random(seed)
    blobs: list[memoryview] = []
    tree = pack_tree((torch.ones(3), {"k": [1, 2.5, None]}), blobs)
    good = [frame_bytes({"value": tree}, blobs)[8:]]
    frames = []
    for base in good:
        for _ in range(200):
            data = bytearray(base)
            for _ in range(rng.randint(1, 8)):
                position = rng.randrange(len(data))
                data[position] = rng.randrange(256)
            frames.append(bytes(data))
            frames.append(bytes(data[: rng.randrange(len(data))]))
    for _ in range(200):
        frames.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))))
    return frames


ADVERSARIAL_TREES: list[Any] = [
    {"k": "tensor", "dtype": "float32", "shape": [2**40, 2**40], "blob": 0},
    {"k": "tensor", "dtype": ["float32"], "shape": [1], "blob": 0},
    {"k": "tensor", "dtype": "float32", "shape": [1] * 40, "blob": 0},
    {"k": "tensor", "dtype": "float32", "shape": [1], "blob": True},
    {"k": "int", "v": "9" * 5000},
    {"k": "float", "v": "1e9x"},
    {"k": "dtype", "v": ["float32"]},
    {"k": "dict", "items": [[{"k": "dict", "items": []}, {"k": "none"}]]},
    {"k": "dict", "items": [[{"k": "none"}]]},
    {"k": "dict", "items": "nope"},
    {"k": "arena", "dtype": "float32", "shape": [1], "offset": 0},
    {"k": "mem", "dtype": "float32", "shape": [1], "addr": 1, "nbytes": 4},
    {"k": {"nested": 1}},
    [1, 2, 3],
    None,
]


@pytest.mark.parametrize("seed", range(5))
def test_random_and_mutated_frames_only_ever_raise_protocol_errors(seed: int) -> None:
    for frame in _mutations(seed):
        with contextlib.suppress(ProtocolError):
            _decode_everything(frame)


@pytest.mark.parametrize("tree", ADVERSARIAL_TREES, ids=range(len(ADVERSARIAL_TREES)))
def test_adversarial_trees_are_refused_with_protocol_errors(tree: Any) -> None:
    frame = frame_bytes({"value": tree}, [b"\0" * 4])[8:]
    header, blobs = decode_frame(memoryview(frame))
    with pytest.raises(ProtocolError):
        unpack_tree(header["value"], blobs)
