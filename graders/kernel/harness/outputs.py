"""Describing a call's output for the grader, who reads it from outside.

The output stays where the problem code left it; the harness only says where
each tensor's bytes are (``addr``, ``nbytes``) and what they are (dtype,
shape), and keeps the objects alive until the grader has read them. Types
are compared by identity with objects captured before any submission code
was imported, never by name; a tensor subclass, a container subclass or any
other object is described as ``opaque`` (by its type's name, read without
going through the type's own attribute lookup) and its methods are never
called. Non-contiguous tensors, and tensors on a GPU, are copied into a
contiguous CPU tensor first (inside the measured time, like any other work
of the call).
"""

from __future__ import annotations

from typing import Any

import torch

from .protocol import DTYPE_NAMES, MAX_TREE_DEPTH, MAX_TREE_NODES, pack_scalar

_TENSOR = torch.Tensor
_TUPLE, _LIST, _DICT = tuple, list, dict
_dict_items = dict.items
_type_qualname = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__
_is_subclass = issubclass


def type_name(value: Any) -> str:
    kind = type(value)
    try:
        module, name = _type_module(kind, type), _type_qualname(kind, type)
    except Exception:  # a hostile metaclass
        return "<unnamed type>"
    text = f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else "?"
    return text[:200]


class Describer:
    def __init__(self, keep: list[Any]) -> None:
        self.keep = keep
        self.nodes = 0

    def describe(self, value: Any, depth: int = 0) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_TREE_NODES or depth > MAX_TREE_DEPTH:
            return {"k": "opaque", "what": "value", "cls": "a value nested too deeply or too large"}
        kind = type(value)
        if kind is _TENSOR:
            return self._tensor(value)
        scalar = pack_scalar(value)
        if scalar is not None:
            return scalar
        if kind is _TUPLE or kind is _LIST:
            items = [self.describe(item, depth + 1) for item in value]
            return {"k": "tuple" if kind is _TUPLE else "list", "items": items}
        if kind is _DICT:
            return self._dict(value, depth)
        what = "tensor" if _is_subclass(kind, _TENSOR) else "value"
        if _is_subclass(kind, (_TUPLE, _LIST, _DICT)):
            what = "container"
        return {"k": "opaque", "what": what, "cls": type_name(value)}

    def _dict(self, value: dict[Any, Any], depth: int) -> dict[str, Any]:
        items = []
        for key, item in _dict_items(value):
            key_node = pack_scalar(key)
            if key_node is None or key_node["k"] == "dtype":
                return {"k": "opaque", "what": "container", "cls": "a dict with non-scalar keys"}
            items.append([key_node, self.describe(item, depth + 1)])
        return {"k": "dict", "items": items}

    def _tensor(self, tensor: torch.Tensor) -> dict[str, Any]:
        dtype = DTYPE_NAMES.get(tensor.dtype)
        if dtype is None:
            return {"k": "opaque", "what": "tensor", "cls": f"a {tensor.dtype} tensor"}
        if tensor.is_neg() or tensor.is_conj():
            # Its memory holds the value before a negation or conjugation still to come.
            lazy = "negation" if tensor.is_neg() else "conjugation"
            return {"k": "opaque", "what": "lazy", "cls": f"tensor with a lazy {lazy} bit"}
        storage = tensor.untyped_storage()
        node: dict[str, Any] = {
            "k": "mem",
            "dtype": dtype,
            "shape": list(tensor.shape),
            "device": tensor.device.type,
            "storage": [storage.data_ptr(), storage.nbytes()],
        }
        self.keep.append(tensor)
        if tensor.device.type != "cpu":
            tensor = tensor.to("cpu")
            self.keep.append(tensor)
        if not tensor.is_contiguous():
            tensor = tensor.contiguous()
            self.keep.append(tensor)
        node["addr"] = tensor.data_ptr()
        node["nbytes"] = tensor.numel() * tensor.element_size()
        return node


def describe(value: Any, keep: list[Any]) -> dict[str, Any]:
    return Describer(keep).describe(value)
