"""Masked mean pooling of a padded batch (same result as the original).

Still one sequence at a time (and one time step at a time): every operator
(as_strided, _local_scalar_dense, copy_, add_, div_, empty) is run through a
dispatch-key handle, i.e. ``Dispatcher::callBoxedForDispatchKey`` straight to the
CPU / CompositeExplicitAutograd kernel, which runs no RecordFunction. As in the
corpus's launches_loop_by_op_dk, but the handles are not any OpOverload's
``_op_dk`` (the runner wraps those, in OpOverload.__init__ and on every existing
overload): they come fresh from ``torch._C._get_operation_overload(name,
overload)``, the C function that OpOverloadPacket itself calls, which hands back
``(op, op_dk, tags)`` with an unwrapped op_dk. The runner neither wraps nor
refuses it, and the handle is a pybind function the profile hook ignores. The
kernels chosen call no further dispatcher operator, so the thousands of
operators per call leave no trace event."""

import torch

DK = torch._C.DispatchKey
_get_overload = torch._C._get_operation_overload  # not wrapped by the runner


def _op(name: str, overload: str = ""):
    full = f"{name}.{overload}" if overload else name
    for key in (DK.CPU, DK.CompositeExplicitAutograd):
        if torch._C._dispatch_has_kernel_for_dispatch_key(full, key):
            call = _get_overload(name, overload)[1]  # the raw op_dk
            return lambda *args, **kwargs: call(key, *args, **kwargs)
    raise RuntimeError(name)


_as_strided = _op("aten::as_strided")
_item = _op("aten::_local_scalar_dense")
_copy = _op("aten::copy_")
_add = _op("aten::add_", "Tensor")
_div = _op("aten::div_", "Tensor")
_empty = _op("aten::empty", "memory_format")


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    batch, _time, features = x.shape
    sb, st, sf = x.stride()
    base = x.storage_offset()
    (sl,) = lengths.stride()
    pooled = _empty([batch, features], dtype=x.dtype)
    count = _empty([], dtype=x.dtype)
    for i in range(batch):  # the per-sequence loop is still here
        n = int(_item(_as_strided(lengths, [], [], lengths.storage_offset() + i * sl)))
        acc = _as_strided(pooled, [features], [1], i * features)
        _copy(acc, _as_strided(x, [features], [sf], base + i * sb), False)
        for t in range(1, n):
            _add(acc, _as_strided(x, [features], [sf], base + i * sb + t * st))
        _copy(count, _as_strided(lengths, [], [], lengths.storage_offset() + i * sl), False)
        _div(acc, count)
    return pooled
