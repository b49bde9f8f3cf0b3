"""Masked mean pooling of a padded batch: each sequence of ``x`` (batch, time,
features) is averaged over its first ``lengths[i]`` positions only.

Trick (a gap in ``profile_runner/watch.py``: ``_watched_op_dk``). The watch
replaces every overload's ``_op_dk`` (the dispatcher's call for one dispatch
key, which runs a kernel with no RecordFunction) by a Python closure so that a
call of it is seen. The raw pybind function stays in the closure's cell:
``overload._op_dk.__closure__[0].cell_contents``. The program takes the raw
``_op_dk`` of four operators from there and calls them through the C builtin
``map`` (with ``functools.partial`` for keyword arguments): no Python frame,
no ``c_call`` event, no RecordFunction. The kernels run, but the trace shows no
``aten::`` event for them and the hook sees no call.

The planted problem is kept: the Python loop over the batch is the original's,
one sequence at a time (96 per call), and each element still launches real
aten kernels: ``_local_scalar_dense`` (the host read of ``lengths[i]``, as
``int(lengths[i])`` did), three ``as_strided`` views (the original's
``x[i, :n]`` / ``pooled[i]`` indexing) and one ``addmv`` (the sum over the
first n positions, scaled by 1/n): five kernel launches per element, 480 per
call, with their host overhead. Counted launches per call: the three outside
the loop (``empty``, ``ones``).

Fix: keep the raw ``_op_dk`` out of reach of the program: the wrapper should
not close over it (hold it in a table only the runner's sealed module can read,
keyed by the overload's id), or make ``_op_dk`` a property that hands out the
watched wrapper built from a C-level trampoline; likewise for every
``_wrap_c_function`` wrapper (``torch._C._to_dlpack.__closure__``).
"""

import functools
import types

import torch

_CPU = torch._C.DispatchKey.CPU


def _raw(overload):
    """The overload's kernel call for one dispatch key, as torch made it."""
    op_dk = overload._op_dk
    if isinstance(op_dk, types.FunctionType) and op_dk.__closure__:
        op_dk = op_dk.__closure__[0].cell_contents  # the runner's wrapper's cell
    return op_dk


_AS_STRIDED = _raw(torch.ops.aten.as_strided.default)
_SCALAR = _raw(torch.ops.aten._local_scalar_dense.default)
_ADDMV_OUT = _raw(torch.ops.aten.addmv.out)


def _call(fn, *args):
    """Call a C function from C (``map``)."""
    (result,) = map(fn, *([a] for a in args))
    return result


def step(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    batch, time, features = x.shape
    pooled = torch.empty(batch, features, dtype=x.dtype)
    ones = torch.ones(time, dtype=x.dtype)
    x, lengths = x.contiguous(), lengths.contiguous()
    x0, l0 = x.storage_offset(), lengths.storage_offset()
    for i in range(batch):
        # n = int(lengths[i]): a view of lengths[i], then its value read on the host.
        n = _call(_SCALAR, _CPU, _call(_AS_STRIDED, _CPU, lengths, [], [], l0 + i))
        # x[i, :n] seen as (features, n); pooled[i]; the first n ones.
        rows = _call(_AS_STRIDED, _CPU, x, [features, n], [1, features], x0 + i * time * features)
        row_out = _call(_AS_STRIDED, _CPU, pooled, [features], [1], i * features)
        first = _call(_AS_STRIDED, _CPU, ones, [n], [1], 0)
        # pooled[i] = x[i, :n].sum(dim=0) / n
        addmv = functools.partial(_ADDMV_OUT, beta=0, alpha=1.0 / n, out=row_out)
        _call(addmv, _CPU, row_out, rows, first)
    return pooled
