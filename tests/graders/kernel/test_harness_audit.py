"""The in-process audit's judgement of finalizers: torch's own bookkeeping (which
torch.compile registers on its first call) is let through by identity, never by the
name a function gives itself."""

from __future__ import annotations

import functools
import weakref

import torch
import torch.library

from graders.kernel.harness import audit


class _Anything:
    pass


def test_torchs_own_finalizer_functions_are_recognised_by_identity() -> None:
    assert audit._torchs_own_finalizer(torch.library._del_library)


def test_a_function_that_names_itself_after_torchs_is_not_torchs() -> None:
    def _del_library(*_args: object) -> None:
        pass

    _del_library.__module__ = "torch.library"
    _del_library.__qualname__ = "_del_library"
    assert not audit._torchs_own_finalizer(_del_library)
    assert not audit._torchs_own_finalizer(functools.partial(_del_library, 1))


def test_torch_functions_that_compute_are_not_let_through() -> None:
    assert not audit._torchs_own_finalizer(torch.add)
    assert not audit._torchs_own_finalizer(functools.partial(torch.Tensor.copy_))


def test_a_finalizer_registered_after_the_baseline_is_named() -> None:
    checks = audit.Audit([])
    checks.after_import()
    target = _Anything()
    weakref.finalize(target, print, "deferred")
    assert "weakref finalizers were registered by a call and are still pending" in checks.quick()
    del target
    assert not any("finalizers" in found for found in checks.quick())
