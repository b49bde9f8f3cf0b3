"""Comparing a submission's output with the reference's, in the trusted process.

Both outputs arrive as the harness's descriptions (``outputs``) plus
the values the grader read out of each process. An output passes when it has
the reference's structure, nothing in it is opaque (a tensor or container
subclass, a foreign object), every tensor has the reference's dtype, shape
and device, and ``|out - ref| <= atol + rtol * |ref|`` holds everywhere, NaN
and infinities matching exactly. Contiguity does not matter: values are read
contiguous.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .side import clean_text
from .spec import Tolerance

PLAIN = {"tensor": "torch.Tensor", "sequence": "tuple or list", "dict": "dict"}


@dataclass
class Comparison:
    ok: bool = True
    message: str = ""  # public: the report's reason quotes it
    # What only reviewers and operators may read: a task's own check may print the
    # expected value ("row 4: got 0, expected 8.16"), which the solver must not learn.
    detail: str = ""
    integrity: str = ""  # set when the output breaks a rule meant to stop gaming
    max_abs_error: float | None = 0.0
    max_rel_error: float | None = 0.0
    shapes: list[list[int]] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    judge_values: bool = True

    def fail(self, message: str, detail: str = "") -> None:
        if self.ok:
            self.ok, self.message, self.detail = False, message, detail

    @property
    def full_message(self) -> str:
        """The message with its private detail, for the trial record (hidden from
        solvers) and the operator notes."""
        return f"{self.message}: {self.detail}" if self.detail else self.message

    def violate(self, message: str) -> None:
        self.fail(message)
        if not self.integrity:
            self.integrity = message

    def note_errors(self, abs_error: float, rel_error: float) -> None:
        for name, value in (("max_abs_error", abs_error), ("max_rel_error", rel_error)):
            current = getattr(self, name)
            if current is not None:
                setattr(self, name, None if not math.isfinite(value) else max(current, value))


ToleranceFor = Callable[[str], Tolerance]


def compare_outputs(
    ref_node: dict[str, Any],
    ref_value: Any,
    sub_node: Any,
    sub_value: Any,
    tolerance_for: ToleranceFor,
    *,
    judge_values: bool = True,
) -> Comparison:
    """Structure, types, dtypes, shapes and devices always; values against the
    tolerances only when ``judge_values`` (a task's own check may decide them)."""
    result = Comparison(judge_values=judge_values)
    _walk("output", ref_node, ref_value, sub_node, sub_value, tolerance_for, result)
    return result


def _kind(node: Any) -> str:
    kind = node.get("k") if isinstance(node, dict) else None
    if kind in ("list", "tuple"):
        return "sequence"
    return "tensor" if kind in ("tensor", "mem") else str(kind)


def _describe(node: Any) -> str:
    if _kind(node) == "tensor":
        return f"a {node.get('dtype')} tensor"
    kind = node.get("k") if isinstance(node, dict) else None
    return {"list": "a list", "tuple": "a tuple", "dict": "a dict", "none": "None"}.get(
        str(kind), f"a {kind}"
    )


def _walk(
    path: str,
    ref_node: Any,
    ref: Any,
    sub_node: Any,
    sub: Any,
    tolerance_for: ToleranceFor,
    result: Comparison,
) -> None:
    if _kind(ref_node) == "opaque":
        what = clean_text(ref_node.get("cls"), 200)
        raise ValueError(f"the reference's {path} is a {what}: it cannot be compared")
    if _kind(sub_node) == "opaque":
        wanted = PLAIN.get(_kind(ref_node), _describe(ref_node))
        kind = {"tensor": " (a torch.Tensor subclass)", "container": " (a subclass)"}.get(
            str(sub_node.get("what")), ""
        )
        result.violate(
            f"{path} is a {clean_text(sub_node.get('cls'), 200)}{kind}, not a plain {wanted}"
        )
        return
    if _kind(ref_node) != _kind(sub_node):
        result.fail(f"{path} is {_describe(sub_node)}, the reference returns {_describe(ref_node)}")
        return
    kind = _kind(ref_node)
    if kind == "tensor":
        _compare_tensor(path, ref_node, ref, sub_node, sub, tolerance_for, result)
    elif kind == "sequence":
        if len(ref) != len(sub):
            result.fail(f"{path} has {len(sub)} items, the reference returns {len(ref)}")
            return
        for index, (r_node, s_node) in enumerate(
            zip(ref_node["items"], sub_node["items"], strict=True)
        ):
            _walk(f"{path}[{index}]", r_node, ref[index], s_node, sub[index], tolerance_for, result)
    elif kind == "dict":
        if list(ref) != list(sub):
            mine, theirs = clean_text(list(sub), 300), clean_text(list(ref), 300)
            result.fail(f"{path} has keys {mine}, the reference has {theirs}")
            return
        for (_, r_node), (_, s_node), key in zip(
            ref_node["items"], sub_node["items"], ref, strict=True
        ):
            where = f"{path}[{clean_text(key, 100)}]"
            _walk(where, r_node, ref[key], s_node, sub[key], tolerance_for, result)
    elif result.judge_values and not _scalars_match(ref, sub, tolerance_for("float64")):
        result.fail(
            f"{path} is {clean_text(sub, 200)}, the reference returns {clean_text(ref, 200)}"
        )


def _scalars_match(ref: Any, sub: Any, tolerance: Tolerance) -> bool:
    if isinstance(ref, float) and isinstance(sub, float | int) and not isinstance(sub, bool):
        if math.isnan(ref) or math.isnan(sub):
            return math.isnan(ref) and math.isnan(sub)
        return ref == sub or abs(sub - ref) <= tolerance.atol + tolerance.rtol * abs(ref)
    return type(ref) is type(sub) and ref == sub


def _compare_tensor(
    path: str,
    ref_node: dict[str, Any],
    ref: torch.Tensor,
    sub_node: dict[str, Any],
    sub: torch.Tensor,
    tolerance_for: ToleranceFor,
    result: Comparison,
) -> None:
    result.shapes.append(list(sub.shape))
    result.dtypes.append(str(sub_node.get("dtype")))
    # Where the task's own check decides (GPU MODE), floating dtypes may differ: the check
    # compares values, as the suites' own examples expect (a float32 prefix sum against a
    # float64 reference). Elsewhere the dtype is part of the answer.
    floats = sub.dtype.is_floating_point and ref.dtype.is_floating_point
    if sub.dtype != ref.dtype and (result.judge_values or not floats):
        result.fail(
            f"{path} has dtype {sub_node.get('dtype')}, the reference's is {ref_node.get('dtype')}"
        )
        return
    if tuple(sub.shape) != tuple(ref.shape):
        result.fail(f"{path} has shape {list(sub.shape)}, the reference's is {list(ref.shape)}")
        return
    if sub_node.get("device") != ref_node.get("device"):
        result.fail(
            f"{path} is on {sub_node.get('device')}, the reference's is on {ref_node.get('device')}"
        )
        return
    tolerance = tolerance_for(str(ref_node.get("dtype")))
    abs_error, rel_error, bad = _errors(ref, sub, tolerance)
    result.note_errors(abs_error, rel_error)
    if bad and result.judge_values:
        result.fail(
            f"{path} differs from the reference at {bad} of {ref.numel()} elements "
            f"(max abs error {abs_error:.3g}, max rel error {rel_error:.3g}; "
            f"tolerance atol={tolerance.atol:g}, rtol={tolerance.rtol:g})"
        )


def _errors(ref: torch.Tensor, sub: torch.Tensor, tolerance: Tolerance) -> tuple[float, float, int]:
    """(max abs error, max rel error, elements out of tolerance)."""
    if ref.numel() == 0 or (ref.dtype == sub.dtype and torch.equal(ref, sub)):
        return 0.0, 0.0, 0
    if not (ref.dtype.is_floating_point or ref.dtype.is_complex):
        diff = (sub.to(torch.float64) - ref.to(torch.float64)).abs()
        bad = int((sub != ref).sum())
        return float(diff.max()), _max_rel(diff, ref.to(torch.float64).abs()), bad
    wide = torch.complex128 if ref.dtype.is_complex else torch.float64
    r, s = ref.to(wide), sub.to(wide)
    r_nan, s_nan = torch.isnan(r), torch.isnan(s)
    infinite = torch.isinf(r) | torch.isinf(s)
    special_bad = (r_nan != s_nan) | (infinite & ~(r_nan | s_nan) & (r != s))
    finite = ~(r_nan | s_nan | infinite)
    diff = torch.where(finite, (s - r).abs(), torch.zeros((), dtype=torch.float64))
    magnitude = r.abs()
    out_of_tolerance = finite & (diff > tolerance.atol + tolerance.rtol * magnitude)
    bad = int((special_bad | out_of_tolerance).sum())
    abs_error = float(diff.max())
    if bool(special_bad.any()):
        abs_error = math.inf
    return abs_error, _max_rel(diff, magnitude), bad


def _max_rel(diff: torch.Tensor, magnitude: torch.Tensor) -> float:
    """Over the elements where the reference is not zero (elsewhere only atol applies)."""
    nonzero = magnitude > 0
    return float((diff[nonzero] / magnitude[nonzero]).max()) if bool(nonzero.any()) else 0.0
