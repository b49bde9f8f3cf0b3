"""Watching the program's host reads that the profiler cannot see.

On a CPU host a program can read a tensor's values without any ``aten::``
operator: ``t.tolist()``, ``t.numpy()``, ``np.asarray(t)``, a DLPack capsule,
``t.data_ptr()`` read through ctypes, ``t.untyped_storage()[i]``. None of these
shows in the trace as ``aten::item``, and work done in NumPy on such a view
launches no ``aten::`` operator at all. ``Watch`` observes them with a profile
hook (``sys.setprofile``, on the program's own thread; threads the program
starts get it from ``start_new_thread``, which the watch puts in the place of
``_thread.start_new_thread`` and of threading's alias of it), matched by
identity against objects captured when this module is imported, before any
program code exists. The runner's thread holds the ``Watch`` and runs a sealed
copy of this module (``profile_runner.seal``): nothing the program can reach
(a frame of its thread, a function it is handed, this module's namespace)
leads to the watch or to the tables its hook reads.

The C methods a read goes through (``tolist``, ``numpy``, ``data_ptr``,
``untyped_storage``) are put on ``torch.Tensor`` as Python functions of this
module that call them: a call of a C function made from C code (``map``,
``operator.methodcaller``, ``sorted(key=...)``) gives the hook no event, but
the start of a Python function always does, whoever calls it.

What is recorded, under a label, whenever the *caller* is the program's code:

- a call of a captured C function (``c_call`` events): ``TensorBase.tolist``,
  ``.numpy``, ``.data_ptr``, ``.untyped_storage``,
  ``torch.from_numpy``, ``torch.frombuffer``, ``torch.from_file``,
  ``UntypedStorage.from_file`` / ``from_buffer``, ctypes' ``from_address`` /
  ``from_buffer`` / ``from_buffer_copy``; the caller is the frame the event
  comes from;
- the start of a captured Python function (``call`` events):
  ``Tensor.__array__`` (NumPy's conversion of a tensor: ``np.asarray(t)``,
  ``np.mean(t)``), ``__dlpack__``, ``storage``, ``_typed_storage``,
  ``__reduce_ex__`` (pickling), ``share_memory_``, the
  ``__cuda_array_interface__`` getter, ``torch.save`` and its helpers,
  ``torch.from_dlpack``, ctypes' ``string_at`` / ``wstring_at`` / ``cast``; the
  caller is the frame below the function's own;
- an exception that C code raised into a frame working for the program (an
  operator that refuses an out-of-bounds index names the index in its
  message), seen by a trace function (``sys.settrace``, line events off) at
  the frame it was raised into, whoever handles it: counted as a read that
  copies, under ``ERROR_FROM_C``; ``frame.f_trace`` is a property whose
  setter only reports the attempt, so no frame can be unhooked;
- ``Tensor.set_`` given a storage (through ``_over_a_storage``), as a method
  or as ``torch.ops.aten.set_``: the tensor's bytes are then within reach of
  the storage's own C methods; a view. Those methods are watched too:
  ``_write_file`` and ``UntypedStorage.__getitem__`` copy; the C base's
  methods that hand out its memory or address (``_share_fd_cpu_``,
  ``_share_filename_cpu_``, ``data_ptr``, ``_new_using_fd_cpu``,
  ``from_file``, ...: ``STORAGE_METHODS``, ``STORAGE_CLASS_METHODS``) are
  views, each a Python wrapper on the C class;
- ``torch.from_numpy``, ``torch.frombuffer`` and ``torch.as_tensor`` over host
  memory (Python wrappers): the tensor is made over a copy of the memory, so
  the program holds nothing that shares it; ``torch.from_file`` (a wrapper
  too) maps a file, a view;
- ``Generator.set_state`` and ``Generator.__setstate__`` (Python wrappers on
  the C class): a CPU generator's state is read from a tensor's memory in C++
  and its seed handed back as an int, eight bytes of any tensor; counted as a
  read that copies; so is an error a finalizer raised that reached
  ``sys.unraisablehook`` (seen by the runner's audit hook);
- calls that could blind the hook or leave the process: ``sys.setprofile``,
  ``sys.settrace``, ``sys.getprofile``, ``sys.gettrace``,
  ``threading.setprofile`` / ``settrace``, ``gc.get_objects`` /
  ``get_referrers`` / ``get_referents``, ``os.fork`` and the other ways of
  starting a process, the dispatcher's redispatch (``OpOverload.redispatch``,
  ``redispatch_boxed``), a kernel called on its own (``call_boxed`` on what
  ``torch.library.get_kernel`` hands out) and an overload's ``_op_dk`` (a watched wrapper on
  every overload, and on the raw handle ``torch._C._get_operation_overload``
  hands out; only the program's own calls count), which run an operator
  without recording it; ``torch.save`` given a pickle module other than the
  standard one; a question whether the profiler is on, from the program's own
  code (``PROFILER_QUERY``). These are tampering findings wherever they
  happen while the hook is on. Those that would hand the program objects it
  was not given (``REACHING``: the hooks, every object, another thread's
  frames) are refused as well: the hook records the call, then raises
  before it runs (the thread then goes on unhooked, which its next mark
  shows), or the audit hook does.

``torch.autograd._enable_record_function`` (the same switch in
``torch._C._autograd``), which turns recording off for a thread while the
profiler's session goes on, is replaced by a function that only reports the
attempt; so are the JIT's graph passes, TorchScript's module serializer and
the operators only the JIT's interpreter knows (``aten::_tensor_to_list``),
which read tensor memory in C++ with no event.

"The program's code" is every frame whose code is not torch's own or this
runner's: the program's files, but also NumPy, the standard library and code
compiled at run time, since they act on the program's behalf (``np.mean(t)``
converts the tensor inside NumPy's Python code). A read counts when the nearest
frame below it that is not torch's is the program's: torch's Python code that
calls a read for the program (``tree_map`` handed ``Tensor.tolist``,
``torch._numpy``'s ``tolist``) reads for it. A read made inside another watched
function (``Tensor.__array__`` calling ``self.numpy()``) is that one's and
counts once. When the nearest such frame is the runner's, the read is the
runner's own only if that frame is one of its reading functions (its copy of
a call's outputs) or this module's code: any other runner frame (the one that
called the program's step) can only be below a read that C code made for the
program, such as a finalizer of C callables run as the step's frame is
released, and that read counts. Code that
claims a file of torch's (or the runner's) is checked, the first time it makes
such a call, to be equal to code compiled from that file, so that a program
cannot pass its own code off as torch's by naming it so.

The wrappers are put on ``torch._C.TensorBase`` too (an immutable type, set
through the dict behind its mappingproxy), so that ``torch._C.TensorBase.tolist``
handed to ``map`` is the wrapper, and ``torch.as_tensor`` / ``torch.asarray``
are replaced (on torch and on its C class of functions) by functions that call
the watched ``_over_host_memory`` when handed memory to share (a NumPy array,
anything with ``__array_interface__``, ``__array__`` or ``__dlpack__``).
torch._C's functions that hand out memory or an address (``_to_dlpack``,
``_data_address``, ``_construct_storage_from_data_pointer``, ...:
``C_MEMORY_FUNCTIONS``) are replaced on torch._C by Python wrappers, one code
object each, so that they are watched Python functions too.

The hook is on from just before the program's import to the end of the last
profiled step. Reads are counted apart for the import, each warm-up call and
each profiled step; a read on any watched thread goes to the call running.
It is off for the timed batches, whose timing must stay clean. After each
profiled step's call the program's thread calls two marks (``STEP_MARK``, a C
function, and ``trace_mark``), which only the live hook and trace function
record: a mark the runner does not find counted is a finding (a hook removed
cannot be put back: nothing the program reaches holds it). The runner also
checks that no Python thread it does not watch is alive. An exception inside
the hook (a program running near the recursion limit) would make the
interpreter drop it; it is caught and is a finding. The hook's own checks
never run the program's code: code that runs
inside a hook gives no events and would be unwatched, so owners are checked
with ``type()`` (``isinstance`` reads ``__class__``) and file names as plain
``str`` (a code object may carry a subclass).
"""

from __future__ import annotations

import _ctypes
import _imp
import _thread
import contextlib
import ctypes
import dis
import gc
import os
import pickle as _pickle
import sys
import threading
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as _np
import torch

_setprofile = sys.setprofile
_settrace = sys.settrace
_gettrace = sys.gettrace
_addaudithook = sys.addaudithook
_getprofile = sys.getprofile
_current_frames = sys._current_frames
_get_ident = threading.get_ident
_get_native_id = threading.get_native_id
_main_ident = threading.main_thread().ident
_main_native_id = _get_native_id()  # imported on the runner's main thread
_compile = compile
_gc_isenabled, _gc_disable = gc.isenabled, gc.disable
_os_open, _os_read, _os_close, _O_RDONLY = os.open, os.read, os.close, os.O_RDONLY


def _read_file(filename: str) -> bytes:
    """A file's bytes, read with functions captured at import: the hook reads torch's
    files as it runs, and the program may have replaced anything in pathlib or io."""
    fd = _os_open(filename, _O_RDONLY)
    chunks = []
    try:
        while chunk := _os_read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        _os_close(fd)
    return b"".join(chunks)


# The last task id the kernel handed out in this process's PID namespace.
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def _last_task_id() -> int | None:
    try:
        return int(_read_file(NS_LAST_PID))
    except (OSError, ValueError):
        return None


_TensorBase = torch._C.TensorBase
_Tensor = torch.Tensor
_start_new_thread = _thread.start_new_thread
# A module's namespace, read past its class: a program may give a module a class of its
# own (the runner does so to torch.autograd.profiler), whose attribute lookups would run
# its code on the runner's thread.
_module_dict = vars(types.ModuleType)["__dict__"].__get__
# Where a thread starter is found: _thread's, its old alias, and threading's own alias,
# bound at its import (threads started through it directly, not as threading.Thread).
_MISSING = object()


def exact_get(namespace: Any, name: str) -> Any:
    """``namespace[name]`` (a dict, or a class's mappingproxy) read without running any
    code of the program's, else ``_MISSING``. A key that is not exactly a str (a
    subclass whose hash is the name's) would have its ``__eq__`` run by the lookup, on
    the runner's thread: a namespace holding one is not read at all. Iterating a dict
    runs no code of its keys'."""
    for key in namespace:
        if type(key) is not str:
            return _MISSING
    return namespace.get(name, _MISSING)


_STARTERS = (
    (_thread, "start_new_thread"),
    (_thread, "start_new"),
    (threading, "_start_new_thread"),
)
# The names of _thread's starters, in any module object made of it.
_STARTER_NAMES = frozenset(name for module, name in _STARTERS if module is _thread)

# The C methods of tensors that read memory, wrapped as Python functions (see above).
_C_TOLIST = _TensorBase.tolist
_C_NUMPY = _TensorBase.numpy
_C_DATA_PTR = _TensorBase.data_ptr
_C_UNTYPED_STORAGE = _TensorBase.untyped_storage
_C_APPLY, _C_MAP, _C_MAP2 = _TensorBase.apply_, _TensorBase.map_, _TensorBase.map2_
_C_CONST_DATA_PTR = getattr(_TensorBase, "const_data_ptr")  # noqa: B009 - not in the stubs
# TensorBase's own attributes as torch made them, before the wrappers below replace some.
_C_DESCRIPTORS = dict(_TensorBase.__dict__)


def _tolist(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_TOLIST(self, *args, **kwargs)


def _numpy(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_NUMPY(self, *args, **kwargs)


def _data_ptr(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_DATA_PTR(self, *args, **kwargs)


def _untyped_storage(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_UNTYPED_STORAGE(self, *args, **kwargs)


# Switches that make operators run unrecorded, replaced by functions that only report
# the attempt; the originals are kept nowhere (nothing the runner does needs them).
# ``torch.autograd._enable_record_function(False)`` turns recording off for the
# calling thread while the profiler's session, its windows and canaries go on.
REFUSED: list[str] = []


def _refused(label: str) -> Any:
    def refused(*_args: Any, **_kwargs: Any) -> None:
        if len(REFUSED) < 20:
            REFUSED.append(label)

    return refused


for _owner in (torch._C._autograd, torch.autograd):
    setattr(_owner, "_enable_record_function", _refused("torch.autograd._enable_record_function"))  # noqa: B010
del _owner
# The JIT's graph passes run its operators in C++ with nothing recorded (constant
# propagation evaluates a graph: ``aten::str`` of a constant tensor reads its memory),
# and TorchScript is off in the sandbox, so no fix of the program's needs them. A graph
# also prints the value of every tensor put in it as a constant, so the ways of putting
# one there (a constant, a node's tensor attribute, the JIT's tracer) are refused too.
_JIT_REFUSED = [n for n in dir(torch._C) if n.startswith("_jit_pass_")] + [
    "parse_ir",
    "_create_graph_by_tracing",
    "_create_function_from_trace",
    "_create_function_from_trace_with_dict",
    "_jit_trace_graph",
    "_jit_trace_module",
    "_set_tracing_state",
]
# The originals of the functions replaced on torch._C below, by their label: the hook
# knows them by identity (``_c_functions``), so that a call through an alias torch bound
# at its import (``torch.parse_ir``, ``torch.to_dlpack``) is seen, and ``_rebind_aliases``
# puts the replacement in every such alias's place.
REPLACED_C_FUNCTIONS: dict[str, Any] = {}
for _name in _JIT_REFUSED:
    if hasattr(torch._C, _name):
        REPLACED_C_FUNCTIONS[f"torch._C.{_name}"] = getattr(torch._C, _name)
        setattr(torch._C, _name, _refused(f"torch._C.{_name}"))
del _name


def _apply_(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_APPLY(self, *args, **kwargs)


def _map_(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_MAP(self, *args, **kwargs)


def _map2_(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_MAP2(self, *args, **kwargs)


def _const_data_ptr(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_CONST_DATA_PTR(self, *args, **kwargs)


# Each passes the tensor's values (apply_, map_, map2_: element by element, to a Python
# callable) or its address to Python without an operator.
WRAPPED = {"tolist": _tolist, "numpy": _numpy, "data_ptr": _data_ptr}
WRAPPED["untyped_storage"] = _untyped_storage
WRAPPED |= {"apply_": _apply_, "map_": _map_, "map2_": _map2_}
WRAPPED["const_data_ptr"] = _const_data_ptr

# ``t.set_(storage)`` puts a tensor over a storage the program holds: its bytes are then
# within reach of the storage's own C methods (``_write_file``, indexing), which no
# wrapper covers. Over a storage, the call goes through ``_over_a_storage`` (watched, a
# view); over a tensor or with no source, straight on.
_C_SET_ = _TensorBase.set_
_STORAGE_TYPES = (torch._C.StorageBase, torch.storage.TypedStorage)


def _over_a_storage(tensor: Any, args: Any, kwargs: Any) -> Any:
    return _C_SET_(tensor, *args, **kwargs)


def _set_(self: Any, *args: Any, **kwargs: Any) -> Any:
    source = args[0] if args else kwargs.get("source")
    if issubclass(type(source), _STORAGE_TYPES):
        return _over_a_storage(self, args, kwargs)
    return _C_SET_(self, *args, **kwargs)


# Not watched itself (a set_ over a tensor reads nothing): the search for the program's
# frame goes on below it (see ``_PASSING``).
PASSED_ON = {"set_": _set_}


# A CPU generator's state is read from a tensor's memory in C++, with no operator, and
# its seed handed back as a Python int (``initial_seed()``): eight bytes of any tensor,
# copied into the state, come back out. Each ``set_state`` counts as a read that copies.
_C_SET_STATE = torch._C.Generator.set_state


def _generator_set_state(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_SET_STATE(self, *args, **kwargs)


def _set_on_immutable(cls: type, name: str, value: Any) -> None:
    """Set an attribute of a type Python may not set attributes on (torch's C classes):
    through the dict behind its mappingproxy, then the type's method cache told.
    Otherwise the C function stays one attribute away, where a call made from C
    (``map(torch._C.TensorBase.tolist, ts)``) gives the hook no event."""
    (namespace,) = gc.get_referents(cls.__dict__)
    namespace[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


for _name, _wrapper in {**WRAPPED, **PASSED_ON}.items():
    _wrapper.__doc__ = getattr(_TensorBase, _name).__doc__
    setattr(_Tensor, _name, _wrapper)
    _set_on_immutable(_TensorBase, _name, _wrapper)
# A TorchScript module's serializer copies its tensors' bytes into an archive in C++.
_SCRIPT_SAVES = ("save", "save_to_buffer", "_save_for_mobile", "_save_to_buffer_for_mobile")
for _cls, _name in (
    [(torch._C.Graph, "insertConstant")]
    + [(torch._C.Node, name) for name in ("t_", "ts_", "ival_")]
    + [(torch._C.ScriptModule, name) for name in _SCRIPT_SAVES]
):
    _set_on_immutable(_cls, _name, _refused(f"torch._C.{_cls.__name__}.{_name}"))
del _cls
_generator_set_state.__doc__ = _C_SET_STATE.__doc__
_set_on_immutable(torch._C.Generator, "set_state", _generator_set_state)
# The generator's pickling hook calls the C set_state past that attribute.
_C_GENERATOR_SETSTATE = torch._C.Generator.__setstate__


def _generator_setstate(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_GENERATOR_SETSTATE(self, *args, **kwargs)


_set_on_immutable(torch._C.Generator, "__setstate__", _generator_setstate)

# A storage's bytes reach Python through its own methods, whatever tensor is over it
# (one put there with set_, the legacy constructors, ``Tensor.new``): ``_write_file``
# copies them into a file object, indexing hands out one byte; ``_share_filename_cpu_``
# and ``_share_fd_cpu_`` move them into shared memory a file can read. Watched: the
# first two copy, the last two are views.
_C_WRITE_FILE = torch._C.StorageBase._write_file  # type: ignore[attr-defined]


def _storage_write_file(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_WRITE_FILE(self, *args, **kwargs)


_set_on_immutable(torch._C.StorageBase, "_write_file", _storage_write_file)
STORAGE_READS = {
    "UntypedStorage._write_file": _storage_write_file,
    "UntypedStorage.__getitem__": torch.storage.UntypedStorage.__getitem__,
    "UntypedStorage._share_filename_cpu_": torch.storage.UntypedStorage._share_filename_cpu_,
    "UntypedStorage._share_fd_cpu_": torch.storage.UntypedStorage._share_fd_cpu_,
}
# The storage's C methods that hand out its memory or its address (shared memory a file
# descriptor or a file name reaches, an address, a storage made over a file or over an
# address), as methods and as class methods of the C base: each a Python wrapper with a
# code object of its own, so that a call made from C still starts one the hook sees.
# All views.
STORAGE_METHODS = (
    "_share_fd_cpu_",
    "_share_filename_cpu_",
    "_share_cuda_",
    "_get_shared_fd",
    "_get_filename",
    "data_ptr",
    "_resize_with_addr_",
    "_swap_data_ptr_",
)
STORAGE_CLASS_METHODS = (
    "_new_shared_fd_cpu",
    "_new_shared_filename_cpu",
    "_new_using_fd_cpu",
    "_new_using_filename_cpu",
    "_new_with_file",
    "_new_shared_cuda",
    "from_buffer",
    "from_file",
)
_STORAGE_ORIGINALS = {
    name: torch._C.StorageBase.__dict__[name]
    for name in STORAGE_METHODS + STORAGE_CLASS_METHODS
    if name in torch._C.StorageBase.__dict__
}


def _own_code(wrapper: Any, name: str, qualname: str, doc: str | None) -> Any:
    """``wrapper`` with a code object of its own, named ``qualname``: the hook labels a
    call by its code, so wrappers made from one function need one each."""
    code = wrapper.__code__.replace(co_name=name, co_qualname=qualname)
    watched = types.FunctionType(code, wrapper.__globals__, name, None, wrapper.__closure__)
    watched.__doc__ = doc
    return watched


def _storage_wrapper(name: str) -> Any:
    original = _STORAGE_ORIGINALS[name]
    if name in STORAGE_CLASS_METHODS:

        def wrapper(cls: Any, *args: Any, **kwargs: Any) -> Any:
            return original.__get__(None, cls)(*args, **kwargs)

    else:

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return original(self, *args, **kwargs)

    return _own_code(wrapper, name, f"StorageBase.{name}", original.__doc__)


for _name in _STORAGE_ORIGINALS:
    _wrapper = _storage_wrapper(_name)
    STORAGE_READS[f"UntypedStorage.{_name}"] = _wrapper
    _set_on_immutable(
        torch._C.StorageBase,
        _name,
        classmethod(_wrapper) if _name in STORAGE_CLASS_METHODS else _wrapper,
    )

# torch.as_tensor and torch.asarray make a tensor over a NumPy array's memory without
# copying (over Python numbers and lists they copy): a channel for reads no profiler
# sees, like torch.from_numpy. Replaced, on torch and on the C class that holds them, by
# functions that call ``_over_host_memory`` (watched) when handed memory to share.
_memoryview = memoryview
_C_AS_TENSOR = torch._C._VariableFunctions.as_tensor
_C_ASARRAY = torch._C._VariableFunctions.asarray


def _shares_memory(data: Any) -> bool:
    """Whether ``as_tensor`` / ``asarray`` may make a tensor over the object's own
    memory: an array (NumPy's interfaces, DLPack) or a buffer (``asarray`` shares a
    ``bytearray``'s, an ``array.array``'s, an ``mmap``'s memory). Only C types export a
    buffer in this Python, so the buffer's probe runs no code of the program's."""
    if isinstance(data, _TensorBase):
        return False
    if any(hasattr(data, name) for name in ("__array_interface__", "__array__", "__dlpack__")):
        return True
    try:
        _memoryview(data).release()
    except TypeError:
        return False
    return True


def _over_host_memory(as_array: bool, data: Any, args: Any, kwargs: Any) -> Any:
    """Takes no function: handed one (reachable through ``sys.modules``), it would call
    ``Tensor.tolist`` with its own frame below, and the read would count as this one.
    The tensor is made over a copy (see ``_host_copy``)."""
    return (_C_ASARRAY if as_array else _C_AS_TENSOR)(_host_copy(data), *args, **kwargs)


def _host_copy(data: Any) -> Any:
    """A copy of host memory, made with NumPy (no operator). A tensor made over the
    program's own memory would let it read what torch later writes there
    (``torch.from_numpy(np.empty(n)).copy_(t)``, then NumPy on the array) with no
    read a hook sees; over a copy, the program holds nothing that shares it."""
    if isinstance(data, _np.ndarray) or any(
        hasattr(data, name) for name in ("__array_interface__", "__array__")
    ):
        return _np.array(data, copy=True)
    if hasattr(data, "__dlpack__"):
        return _np.from_dlpack(data).copy()
    try:
        return bytearray(_memoryview(data))  # a buffer (frombuffer, asarray)
    except TypeError:
        return data  # not memory: the C function says why


# torch.from_numpy and torch.frombuffer likewise: Python functions (a call made from C,
# ``map(torch.frombuffer, ...)``, starts one the hook sees), over a copy.
_C_FROM_NUMPY = torch._C._VariableFunctions.from_numpy
_C_FROMBUFFER = torch._C._VariableFunctions.frombuffer


def _from_numpy(ndarray: Any) -> Any:
    return _C_FROM_NUMPY(_host_copy(ndarray))


def _frombuffer(buffer: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_FROMBUFFER(_host_copy(buffer), *args, **kwargs)


# torch.from_file maps a file (shared with the program, which can read it): a view, not
# copied, but a Python function too.
_C_FROM_FILE = torch._C._VariableFunctions.from_file


def _from_file(*args: Any, **kwargs: Any) -> Any:
    return _C_FROM_FILE(*args, **kwargs)


_HOST_WRAPPERS: dict[str, Any] = {
    "from_numpy": _from_numpy,
    "frombuffer": _frombuffer,
    "from_file": _from_file,
}
for _name, _wrapper in _HOST_WRAPPERS.items():
    _wrapper.__doc__ = getattr(torch, _name).__doc__
    setattr(torch, _name, _wrapper)
    _set_on_immutable(type(torch._C._VariableFunctions), _name, staticmethod(_wrapper))


def _as_tensor(data: Any, *args: Any, **kwargs: Any) -> Any:
    if _shares_memory(data):
        return _over_host_memory(False, data, args, kwargs)
    return _C_AS_TENSOR(data, *args, **kwargs)


def _asarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
    if _shares_memory(obj):
        return _over_host_memory(True, obj, args, kwargs)
    return _C_ASARRAY(obj, *args, **kwargs)


torch.as_tensor, torch.asarray = _as_tensor, _asarray
_set_on_immutable(type(torch._C._VariableFunctions), "as_tensor", staticmethod(_as_tensor))
_set_on_immutable(type(torch._C._VariableFunctions), "asarray", staticmethod(_asarray))


def _codes_within(*functions: Any) -> frozenset[int]:
    """The ids of the functions' code objects and of those nested in them (their
    generator expressions)."""
    pending = [function.__code__ for function in functions]
    found: set[int] = set()
    while pending:
        code = pending.pop()
        found.add(id(code))
        pending += [item for item in code.co_consts if isinstance(item, types.CodeType)]
    return frozenset(found)


# The runner's functions a read passes through on its way from the program's code: the
# search for the program's frame goes on below them. The probes of what ``as_tensor`` is
# handed are among them: ``hasattr`` runs the object's ``__getattr__``, which may be a
# chain of C callables that reads a tensor with the probe's frame nearest (a read made
# for whoever called ``as_tensor``, not for the runner).
_PASSING = _codes_within(_as_tensor, _asarray, _set_, _shares_memory, _host_copy)

# torch._C's functions that hand out tensor memory (a DLPack capsule, a storage made over
# an address) or its address: replaced by Python wrappers, each with a code object of
# its own (the hook labels a call by its code), so that a call made from C (``map``)
# still starts a Python function the hook sees.
C_MEMORY_FUNCTIONS = (
    "_pickle_save",  # the JIT's pickler: a tensor's bytes, copied in C++
    "_to_dlpack",
    "_to_dlpack_versioned",
    "_data_address",
    "_storage_address",
    "_construct_storage_from_data_pointer",
    "_tensor_impl_raw_handle",
    "_dlpack_exchange_api",
    # A tensor over memory another library owns (NumPy's, through its __dlpack__): what
    # torch writes into it, the program reads there.
    "_from_dlpack",
)


def _wrap_c_function(name: str) -> Any:
    function = getattr(torch._C, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return _own_code(wrapper, name, f"torch._C.{name}", function.__doc__)


# An operator overload's ``_op_dk`` (the dispatcher's call for one dispatch key) runs a
# kernel with no RecordFunction: nothing in the trace. Every overload's is replaced by a
# Python wrapper (one code object for all), existing ones now and new ones as they are
# made. A call straight from the program's code is tampering; torch's own ``decompose``
# calls it for the program, and the operators a composite kernel runs are recorded.
OP_DK = "OpOverload._op_dk"
REDISPATCH = "OpOverload.redispatch"


def _watched_op_dk(op_dk: Any) -> Any:
    def _op_dk(*args: Any, **kwargs: Any) -> Any:
        return op_dk(*args, **kwargs)

    return _op_dk


_OpOverload = torch._ops.OpOverload
_op_overload_init = _OpOverload.__init__


def _op_overload_made(self: Any, packet: Any, op: Any, op_dk: Any, *args: Any) -> None:
    _op_overload_init(self, packet, op, _watched_op_dk(op_dk), *args)


_OpOverload.__init__ = _op_overload_made  # type: ignore[method-assign,assignment]
for _overload in [o for o in gc.get_objects() if issubclass(type(o), _OpOverload)]:
    _overload._op_dk = _watched_op_dk(_overload._op_dk)
del _overload

# A kernel the dispatcher computed for a dispatch key (``torch.library.get_kernel``)
# called on its own runs with no RecordFunction: nothing in the trace. Its ``call_boxed``
# is replaced on the class by a Python wrapper, so that a call made from C (``map``) is
# seen as well as one made from Python; the C method is watched by name too
# (``_c_functions``), for a program that finds it.
KERNEL_CALL = "call_boxed"
# The switches of the profiler's session: the runner's alone (a program that stops it and
# starts one of its own chooses what the trace records).
SESSION_SWITCHES = (
    "_prepare_profiler",
    "_enable_profiler",
    "_disable_profiler",
    "_enable_profiler_legacy",
    "_disable_profiler_legacy",
    "_toggle_collection_dynamic",
)
# A thread starter of _thread's C code the watch did not replace: its threads run unhooked.
UNWATCHED_STARTER = "a thread starter the runner did not replace"
_KernelFunction = torch._C._SafeKernelFunction
_C_CALL_BOXED = _KernelFunction.__dict__["call_boxed"]


def _call_boxed(self: Any, *args: Any, **kwargs: Any) -> Any:
    return _C_CALL_BOXED(self, *args, **kwargs)


_KernelFunction.call_boxed = _call_boxed  # type: ignore[method-assign]

C_MEMORY_WRAPPERS = {
    name: _wrap_c_function(name) for name in C_MEMORY_FUNCTIONS if hasattr(torch._C, name)
}

# How ``torch.ops`` finds an operator: ``_jit_get_operation`` (a name's callable, for the
# packet) and ``_get_operation_overload`` (an overload's callable and its raw ``_op_dk``
# handle). Both are wrapped:
# - the raw handle gets the watched ``_op_dk`` wrapper, as every overload's does;
# - ``aten::set_`` goes through ``_set_operator``, as ``Tensor.set_`` does;
# - an operator only the JIT's interpreter knows (no dispatcher schema:
#   ``aten::_tensor_to_list``, ``prim::*``) is refused. It runs with no RecordFunction,
#   so no event, and some read tensor memory in C++ (``_tensor_to_list`` copies the
#   values into a list); with TorchScript off a program has no use for them.
#   Which operators those are is decided by overload, and a name only the JIT knew at
#   start stays refused whatever the program registers under it since (a dispatcher
#   overload defined with torch.library under ``aten::_tensor_to_list`` made the name
#   look known, and the packet then handed out the JIT's operation).
_C_JIT_GET_OPERATION = torch._C._jit_get_operation
_C_GET_OPERATION_OVERLOAD = torch._C._get_operation_overload
_all_op_names = torch._C._dispatch_get_all_op_names
# Operator names and overloads (``aten::add``, ``aten::add.Tensor``) the dispatcher has.
_DISPATCHER_OPS: set[str] = set()


def _learn_dispatcher_ops() -> None:
    for name in _all_op_names():
        _DISPATCHER_OPS.add(name)
        _DISPATCHER_OPS.add(name.partition(".")[0])


_learn_dispatcher_ops()
_JIT_ONLY_NAMES = frozenset(schema.name for schema in torch._C._jit_get_all_schemas()) - frozenset(
    _DISPATCHER_OPS
)


def _known_to_the_dispatcher(qualname: str, overload: str | None = None) -> bool:
    """Whether the dispatcher has the operator (``overload``: that overload of it;
    ``""`` the default one)."""
    if qualname in _JIT_ONLY_NAMES:
        return False
    wanted = qualname if not overload else f"{qualname}.{overload}"
    if wanted not in _DISPATCHER_OPS:  # an operator registered since: look again
        _learn_dispatcher_ops()
    return wanted in _DISPATCHER_OPS


def _set_operator(op: Any) -> Any:
    """``torch.ops.aten.set_`` (the packet or an overload): over a storage, through
    ``_over_a_storage`` (watched); otherwise the operator itself."""

    def set_operator(*args: Any, **kwargs: Any) -> Any:
        rest = dict(kwargs)
        tensor = args[0] if args else rest.pop("self", None)
        more = args[1:]
        source = more[0] if more else rest.get("source")
        if issubclass(type(source), _STORAGE_TYPES):
            return _over_a_storage(tensor, more, rest)
        return op(*args, **kwargs)

    return set_operator


def _jit_get_operation(qualname: Any, *args: Any, **kwargs: Any) -> Any:
    found = _C_JIT_GET_OPERATION(qualname, *args, **kwargs)
    name = str.__str__(qualname)  # a str, or the C function had refused it
    if type(found) is not tuple or not found or found[0] is None:  # no such operator
        return found
    if not _known_to_the_dispatcher(name):
        return (_refused(f"the JIT-only operator {name}"), *found[1:])
    if name == "aten::set_":
        return (_set_operator(found[0]), *found[1:])
    return found


def _get_operation_overload(qualname: Any, *args: Any, **kwargs: Any) -> Any:
    found = _C_GET_OPERATION_OVERLOAD(qualname, *args, **kwargs)
    if type(found) is not tuple or len(found) < 2 or found[0] is None:
        return found
    name = str.__str__(qualname)
    overload = args[0] if args else kwargs.get("overload_name", "")
    overload = str.__str__(overload) if isinstance(overload, str) else ""
    if not _known_to_the_dispatcher(name, overload):
        label = f"{name}.{overload}" if overload else name
        refused = _refused(f"the JIT-only operator {label}")
        return (refused, refused, *found[2:])
    op = _set_operator(found[0]) if name == "aten::set_" else found[0]
    return (op, _watched_op_dk(found[1]), *found[2:])


torch._C._jit_get_operation = _jit_get_operation  # type: ignore[assignment]
torch._C._get_operation_overload = _get_operation_overload  # type: ignore[assignment]
_PASSING |= {id(_set_operator(None).__code__)}
# set_'s packet and overloads made before now (torch makes some at import) likewise.
_set_packet = torch.ops.aten.set_
for _overload in [_set_packet, *(getattr(_set_packet, n) for n in _set_packet.overloads())]:
    if not isinstance(_overload._op, types.FunctionType):
        _overload._op = _set_operator(_overload._op)
del _set_packet, _overload

# Asking whether a profiler records lets a program take a fixed path only while it is
# profiled. Every call whose outputs the grader compares is profiled, so such a program
# is graded on the path it shows; it runs otherwise outside the grading all the same,
# so asking is tampering. The questions: torch's module flag (read through the module,
# whose class is swapped for one that hands that name, and the module's dict, to a
# watched function) and the C functions torch answers from (replaced by watched
# wrappers). A call counts only when the program's own code asks (torch asks for itself
# too); a question put through torch's own helpers is not seen.
PROFILER_QUERY = "a question whether the profiler is on"
# torch.save given a pickle module of the program's: its pickler runs inside torch.save,
# a watched function whose nested reads count as the save's one (C callables the
# program hands it, ``staticmethod(list)`` over a map of ``Tensor.tolist``, read with
# the save's frame nearest). The standard pickle module is the only one let through.
FOREIGN_PICKLER = "torch.save with a pickle module of its own"
_SAVE_CODES = frozenset(
    id(getattr(torch.serialization, name).__code__)
    for name in ("save", "_save", "_legacy_save")
    if hasattr(torch.serialization, name)
)
_C_PROFILER_ENABLED = torch._C._autograd._profiler_enabled
_C_PROFILER_TYPE = torch._C._autograd._profiler_type
_module_attribute = types.ModuleType.__getattribute__
_FLAG_NAMES = frozenset({"_is_profiler_enabled", "__dict__"})


def _profiler_enabled(*args: Any, **kwargs: Any) -> Any:
    return _C_PROFILER_ENABLED(*args, **kwargs)


def _profiler_type(*args: Any, **kwargs: Any) -> Any:
    return _C_PROFILER_TYPE(*args, **kwargs)


def _profiler_flag(module: types.ModuleType, name: str) -> Any:
    return _module_attribute(module, name)


class _ProfilerModule(types.ModuleType):
    """``torch.autograd.profiler``'s class while the runner lives."""

    def __getattribute__(self, name: str) -> Any:
        if type(name) is str and name in _FLAG_NAMES:
            return _profiler_flag(self, name)
        return _module_attribute(self, name)


for _owner in (torch._C._autograd, torch.autograd):
    for _name, _function in (
        ("_profiler_enabled", _profiler_enabled),
        ("_profiler_type", _profiler_type),
    ):
        if hasattr(_owner, _name):
            setattr(_owner, _name, _function)
del _owner, _name, _function
torch.autograd.profiler.__class__ = _ProfilerModule

for _name, _wrapper in C_MEMORY_WRAPPERS.items():
    REPLACED_C_FUNCTIONS[f"torch._C.{_name}"] = getattr(torch._C, _name)
    setattr(torch._C, _name, _wrapper)


def _rebind_aliases() -> None:
    """Each replaced torch._C function's other names, bound by torch's modules when they
    were imported (``torch.to_dlpack``, ``torch.utils.dlpack.to_dlpack``,
    ``torch.parse_ir``), rebound to its replacement."""
    replacement = {
        id(original): getattr(torch._C, label.removeprefix("torch._C."))
        for label, original in REPLACED_C_FUNCTIONS.items()
    }
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or module is torch._C:
            continue
        for key, value in list(namespace.items()):
            if id(value) in replacement and any(
                value is original for original in REPLACED_C_FUNCTIONS.values()
            ):
                namespace[key] = replacement[id(value)]


_rebind_aliases()

# Every frame's trace function is the watch's (see ``Watch``). ``frame.f_trace``, within
# reach of any code that holds a frame (a traceback's ``tb_frame``), is replaced on the
# frame type by a property whose setter only reports the attempt: the program cannot
# unhook its own frames. The interpreter sets the field in C, past the property. The
# original descriptor is kept nowhere (its ``__set__`` would unhook a frame), so the
# getter answers None: nothing here or in torch reads it.


def _frame_trace(frame: Any) -> None:
    return None


def _set_frame_trace(frame: Any, value: Any = None) -> None:
    """Refused; the watch takes the call for tampering."""


_set_on_immutable(
    types.FrameType, "f_trace", property(_frame_trace, _set_frame_trace, _set_frame_trace)
)

# The label under which a value read through an error's message counts (see ``Watch``).
ERROR_FROM_C = "an error raised in C code"
# The Python exceptions torch's C++ errors become when a value is refused
# (``OutOfMemoryError``, ``LinAlgError`` and the rest derive from RuntimeError). Others
# that C code raises (an AttributeError that pathlib's cache expects, an import's
# FileNotFoundError, a TypeError over an argument's type) carry no tensor's value: no C
# code but an operator's reads a tensor without a view the watch sees.
_CARRIERS = (IndexError, ValueError, RuntimeError)
# Fixed messages of Python's own errors: no value in them. The regular-expression
# parser raises and handles dozens of the sequences' while compiling one pattern; the
# last two are the warnings module's and the math module's, raised by imports.
_FIXED_MESSAGES = frozenset(
    f"{what} index out of range"
    for what in ("list", "string", "tuple", "range object", "bytearray", "array", "deque")
) | {
    "index out of range",  # bytes
    "list assignment index out of range",
    "pop from empty list",
    "pop index out of range",
    "pop from an empty deque",
    "list.remove(x): x not in list",
    "math domain error",
}


def _carries_a_value(kind: type, error: BaseException) -> bool:
    """Whether an exception C code raised may carry a tensor's value (see above)."""
    if not issubclass(kind, _CARRIERS):
        return False
    if kind is IndexError or kind is ValueError:  # Python's own, not a subclass
        args = error.args
        message = args[0] if len(args) == 1 else None
        return type(message) is not str or message not in _FIXED_MESSAGES
    return True


TORCH_ROOT = str(Path(torch.__file__).resolve().parent) + os.sep
RUNNER_ROOT = str(Path(__file__).resolve().parent.parent) + os.sep  # runner and harness
TRUSTED_ROOTS: tuple[str, ...] = (TORCH_ROOT, RUNNER_ROOT)
# The same roots as the interpreter spells them in co_filename (unresolved paths).
TRUSTED_ROOTS += tuple(
    str(Path(path).parent) + os.sep
    for path in (torch.__file__, str(Path(__file__).parent))
    if str(Path(path).parent) + os.sep not in TRUSTED_ROOTS
)

# The runner's and harness's own files, as the interpreter may spell them: a frame of
# theirs (checked genuine by ``_programs`` first) is never the program's.
RUNNER_ROOTS = tuple(dict.fromkeys((RUNNER_ROOT, str(Path(__file__).parent.parent) + os.sep)))
TORCH_ROOTS = tuple(dict.fromkeys((TORCH_ROOT, str(Path(torch.__file__).parent) + os.sep)))

# For the calls that count only when the program's own code makes them (``_op_dk``,
# ``redispatch``, a question whether the profiler is on, the runner's own reading
# functions, the audited calls): the names by which torch's code makes each call
# itself. A torch frame whose code names none of them did not choose the call: it ran
# a callable it was handed (a decorator's wrapper calling ``func``, handed a
# ``partial`` of the call), and the call is its caller's.
_CALLEE_NAMES = {
    OP_DK: frozenset({"_op_dk"}),
    REDISPATCH: frozenset({"redispatch"}),
    PROFILER_QUERY: frozenset({"_is_profiler_enabled", "_profiler_enabled", "_profiler_type"}),
}


def _method(descriptor: Any, owners: type = _TensorBase) -> Any:
    """A check for a bound C method of a tensor (or of a storage, with ``owners``):
    the same C function, any tensor."""

    def check(bound: Any) -> bool:
        owner = getattr(bound, "__self__", None)
        # type(), never isinstance(): that reads the object's own __class__, which
        # could run the program's code inside the hook, where nothing is watched.
        if not issubclass(type(owner), owners):
            return False
        try:
            return bool(bound == descriptor.__get__(owner))
        except Exception:
            return False

    return check


def _same(reference: Any) -> Any:
    """A check for a C function or a C class method: equal (same C function, same owner)."""

    def check(bound: Any) -> bool:
        try:
            return bool(bound is reference or bound == reference)
        except Exception:
            return False

    return check


_CTYPES_TYPES = frozenset(
    {
        type(ctypes.c_int),
        type(ctypes.c_int * 1),
        type(ctypes.Structure),
        type(ctypes.Union),
        type(ctypes.POINTER(ctypes.c_int)),
        type(ctypes.CFUNCTYPE(None)),
    }
)


def _ctypes_class_method(bound: Any) -> bool:
    return type(getattr(bound, "__self__", None)) in _CTYPES_TYPES


def _c_functions() -> dict[str, list[tuple[str, Any]]]:
    """C functions by their ``__name__``: (label, check) pairs."""
    found: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for name in ("tolist", "numpy", "data_ptr", "untyped_storage", "_storage", "storage"):
        descriptor = _C_DESCRIPTORS.get(name)
        if descriptor is not None:
            found[name].append((f"Tensor.{name}", _method(descriptor)))
    functions: list[tuple[str, Any]] = [
        ("torch.from_numpy", _C_FROM_NUMPY),
        ("torch.frombuffer", _C_FROMBUFFER),
        ("torch.from_file", _C_FROM_FILE),
        # The C originals the wrappers call, bound as torch.UntypedStorage's.
        *(
            (f"UntypedStorage.{name}", _STORAGE_ORIGINALS[name].__get__(None, torch.UntypedStorage))
            for name in ("from_file", "from_buffer")
            if name in _STORAGE_ORIGINALS
        ),
        ("sys.setprofile", sys.setprofile),
        ("sys.settrace", sys.settrace),
        ("sys.getprofile", sys.getprofile),
        ("sys.gettrace", sys.gettrace),
        ("gc.get_objects", gc.get_objects),
        ("gc.get_referrers", gc.get_referrers),
        ("gc.get_referents", gc.get_referents),
        ("sys.addaudithook", sys.addaudithook),
        ("_ctypes.dlopen", _ctypes.dlopen),
    ]
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        functions.append((f"os.{name}", getattr(os, name, None)))
    with contextlib.suppress(ImportError):
        import _posixsubprocess

        functions.append(("_posixsubprocess.fork_exec", _posixsubprocess.fork_exec))
    # Replaced torch._C functions called through an alias the rebinding missed.
    functions += list(REPLACED_C_FUNCTIONS.items())
    functions += [
        (f"torch._C._autograd.{name}", getattr(torch._C._autograd, name, None))
        for name in SESSION_SWITCHES
    ]
    for label, function in functions:
        if function is not None:
            found[function.__name__].append((label, _same(function)))
    storage_data_ptr = _STORAGE_ORIGINALS.get("data_ptr")
    if storage_data_ptr is not None:
        storage_check = _method(storage_data_ptr, torch._C.StorageBase)
        found["data_ptr"].append(("UntypedStorage.data_ptr", storage_check))
    for name in ("from_address", "from_buffer", "from_buffer_copy"):
        found[name].append((f"ctypes.{name}", _ctypes_class_method))
    # Only the watch's starter calls a C starter (see start_new_thread); any other
    # caller holds one the watch did not replace.
    for name in _STARTER_NAMES:
        found[name].append((UNWATCHED_STARTER, lambda _bound: True))
    found["redispatch_boxed"].append(("redispatch_boxed", lambda _bound: True))
    found["call_boxed"].append((KERNEL_CALL, lambda _bound: True))  # see KERNEL_CALL
    return dict(found)


def _python_functions() -> dict[int, tuple[str, types.CodeType]]:
    """Python functions by the id of their code (kept alive here, so ids stay theirs)."""
    functions: list[tuple[str, Any]] = [
        (f"Tensor.{name}", _Tensor.__dict__.get(name))
        for name in (
            "__array__",
            "__dlpack__",
            "storage",
            "_typed_storage",
            "__reduce_ex__",
            "share_memory_",
            "_reduce_ex_internal",
        )
    ]
    functions += [(f"Tensor.{name}", wrapper) for name, wrapper in WRAPPED.items()]
    functions.append(("Generator.set_state", _generator_set_state))
    functions.append(("Generator.set_state", _generator_setstate))
    functions += [("torch.from_numpy", _from_numpy), ("torch.frombuffer", _frombuffer)]
    functions.append(("torch.from_file", _from_file))
    functions += list(STORAGE_READS.items())
    functions += [(PROFILER_QUERY, f) for f in (_profiler_enabled, _profiler_type)]
    functions.append((PROFILER_QUERY, _profiler_flag))
    functions.append(("Tensor.set_ over a storage", _over_a_storage))
    functions.append(("torch.as_tensor over host memory", _over_host_memory))
    functions += [(f"torch._C.{name}", w) for name, w in C_MEMORY_WRAPPERS.items()]
    interface = _Tensor.__dict__.get("__cuda_array_interface__")
    functions.append(("Tensor.__cuda_array_interface__", getattr(interface, "fget", None)))
    serialization = torch.serialization
    functions += [
        ("torch.save", serialization.save),
        ("torch.save", getattr(serialization, "_save", None)),
        ("torch.save", getattr(serialization, "_legacy_save", None)),
        ("torch.from_dlpack", getattr(torch, "from_dlpack", None)),
        ("ctypes.string_at", ctypes.string_at),
        ("ctypes.wstring_at", ctypes.wstring_at),
        ("ctypes.cast", ctypes.cast),
        ("threading.setprofile", threading.setprofile),
        ("threading.settrace", threading.settrace),
        (REDISPATCH, torch._ops.OpOverload.redispatch),
        (KERNEL_CALL, _call_boxed),
        ("ctypes.CDLL", ctypes.CDLL.__init__),
        ("the frame.f_trace setter", _set_frame_trace),
    ]
    op_dk_code = _watched_op_dk(None).__code__
    codes = {id(op_dk_code): (OP_DK, op_dk_code)}
    for label, function in functions:
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            codes[id(code)] = (label, code)
    return codes


_JIT_REFUSED_LABELS = frozenset(f"torch._C.{name}" for name in _JIT_REFUSED)
TAMPERING = _JIT_REFUSED_LABELS | frozenset(
    {
        "sys.setprofile",
        "sys.settrace",
        "sys.getprofile",
        "sys.gettrace",
        "threading.setprofile",
        "threading.settrace",
        "the frame.f_trace setter",
        PROFILER_QUERY,
        FOREIGN_PICKLER,
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.posix_spawnp",
        "os.system",
        "_posixsubprocess.fork_exec",
        UNWATCHED_STARTER,
        *(f"torch._C._autograd.{name}" for name in SESSION_SWITCHES),
        # The dispatcher's redispatch runs an operator with no RecordFunction: unrecorded.
        REDISPATCH,
        "redispatch_boxed",
        KERNEL_CALL,
        OP_DK,
        # A hook on every audited call (open, exec, ...): the program's code inside the
        # runner's own calls.
        "sys.addaudithook",
        # A native library: torch's C++ (recording switched off) or libc (threads no
        # hook watches) within reach, below anything a Python hook sees.
        "ctypes.CDLL",
        "_ctypes.dlopen",
        "ctypes.dlsym",
        "sys._current_frames",
        "subprocess.Popen",
    }
)

# Calls that reach objects the program was not handed (every object, another thread's
# frames, the hooks themselves): recorded, then refused, so that nothing of the runner's
# comes into the program's hands. A frame of the program's own thread (sys._getframe, a
# traceback's tb_frame) holds nothing of the runner's: the program runs on a thread of
# its own (see profile_runner.main).
REACHING = frozenset(
    {
        "sys.getprofile",
        "sys.gettrace",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._current_frames",
    }
)

_getattribute_code = _ProfilerModule.__getattribute__.__code__
_C_FUNCTIONS = _c_functions()
_PYTHON_FUNCTIONS = _python_functions()


def _codes_of(filename: str) -> set[types.CodeType]:
    """Every code object compiled from a file (empty when it cannot be read)."""
    try:
        source = _read_file(filename)
        top = _compile(source, filename, "exec", dont_inherit=True)
    except Exception:
        return set()
    found: set[types.CodeType] = set()
    pending = [top]
    while pending:
        code = pending.pop()
        found.add(code)
        pending += [item for item in code.co_consts if isinstance(item, types.CodeType)]
    return found


# Audit events (raised from C, whoever calls: through map() too) that the watch takes
# for tampering when the program's code raises them while it is on, by label.
AUDITED = {
    "ctypes.dlopen": "ctypes.CDLL",
    "ctypes.dlsym": "ctypes.dlsym",
    "sys.setprofile": "sys.setprofile",
    "sys.settrace": "sys.settrace",
    "sys._current_frames": "sys._current_frames",
    "gc.get_objects": "gc.get_objects",
    "gc.get_referrers": "gc.get_referrers",
    "gc.get_referents": "gc.get_referents",
    "os.fork": "os.fork",
    "os.posix_spawn": "os.posix_spawn",
    "os.system": "os.system",
    "subprocess.Popen": "subprocess.Popen",
}


# The names torch's code would call each audited function by (see _CALLEE_NAMES).
_AUDITED_NAMES = {label: frozenset({label.rpartition(".")[2]}) for label in AUDITED.values()}


def _filename(code: types.CodeType) -> str:
    """A code's file name as a plain str: a code object may carry a str subclass whose
    methods are the program's, which would run inside the hook, unwatched."""
    return str.__str__(code.co_filename)


def _watch_codes() -> frozenset[int]:
    """The ids of every code object of this module's functions and methods, nested
    ones (the hooks made by ``Watch``) included."""
    return _codes_within(
        *(
            value
            for item in list(globals().values())
            for value in ([item] if not isinstance(item, type) else list(vars(item).values()))
            if isinstance(value, types.FunctionType) and value.__module__ == __name__
        )
    )


# Markers: C functions only the runner calls, which the hook takes for signs of life
# rather than reads (see ``Watch.end_step``): a bound method of an object of this
# module's is a C function call of its own, told apart by identity.
_MARKS = (object(), object())
STEP_MARK = _MARKS[0].__sizeof__  # called on the program's thread after each step's call
THREAD_MARK = _MARKS[1].__sizeof__  # called by each thread the program starts, once hooked
_STEP_MARK, _THREAD_MARK = "the step's mark", "a thread's mark"


def trace_mark() -> None:
    """Called on the program's thread after each step's call: the trace function sees
    the frame start (see ``Watch.end_step``)."""


def _thread_entry(box: list[Any], function: Any, args: Any, kwargs: Any) -> Any:
    """The first frame of every thread the program starts: the starting thread's hooks
    are taken out of ``box`` and installed, and dropped from this frame before the
    program's function runs below it."""
    hooks = box.pop()
    _settrace(hooks[1])
    _setprofile(hooks[0])
    del hooks
    THREAD_MARK()
    return function(*args, **kwargs)


# A second _thread module: ``_imp.create_builtin`` makes a new module object of a builtin
# module each time it is asked (``_thread``'s initialisation is multi-phase), with
# starters of its own that the watch never replaced, whose threads would run unhooked.
# ``_imp``'s two functions are replaced, for the life of the process, by ones that hand
# every module they make or run (``_imp`` itself made again included) the watch's
# starter and these two functions.
_C_CREATE_BUILTIN, _C_EXEC_BUILTIN = _imp.create_builtin, _imp.exec_builtin


def _watched_module(module: Any) -> None:
    if not issubclass(type(module), types.ModuleType):
        return
    namespace = _module_dict(module)
    for name, value in (("create_builtin", _create_builtin), ("exec_builtin", _exec_builtin)):
        if exact_get(namespace, name) is not _MISSING:
            namespace[name] = value
    for name in _STARTER_NAMES:
        if type(exact_get(namespace, name)) is types.BuiltinFunctionType:
            namespace[name] = start_new_thread


def _create_builtin(spec: Any) -> Any:
    module = _C_CREATE_BUILTIN(spec)
    _watched_module(module)
    return module


def _exec_builtin(module: Any) -> Any:
    done = _C_EXEC_BUILTIN(module)
    _watched_module(module)
    return done


_imp.create_builtin, _imp.exec_builtin = _create_builtin, _exec_builtin


def start_new_thread(function: Any, args: Any, kwargs: Any = None) -> Any:
    """``_thread.start_new_thread`` while the watch is on: the new thread gets the hooks of
    the thread that starts it, taken from the interpreter (no reference to them is kept
    anywhere the program can look: this function and ``_thread_entry`` close over
    nothing)."""
    box = [(_getprofile(), _gettrace())]
    return _start_new_thread(_thread_entry, (box, function, args, {} if kwargs is None else kwargs))


class Watch:
    """The profile hook and what it saw. Used by the runner's main thread only: the hooks
    run on the program's thread (and the threads it starts), and nothing the program can
    reach holds this object (see ``install``)."""

    def __init__(self, readers: tuple[Any, ...] = ()) -> None:
        """``readers``: the runner's own functions that read tensors while the watch is
        on (its copy of a call's outputs). They and this module's code (which checks
        and puts back the hooks) are the only runner frames that make watched calls."""
        self.readers = _watch_codes() | {id(function.__code__) for function in readers}
        self.where = "at import"  # for findings
        self.imported: dict[str, int] = {}
        self.warmup: list[dict[str, int]] = []
        self.steps: list[dict[str, int]] = []
        self.between: dict[str, int] = {}  # after a step's call, before the next step
        self.counts = self.imported  # where reads go now
        self.violations: list[str] = []
        self.unwatched_steps: list[int] = []
        self.watched: set[int] = set()
        # The watched threads by the kernel's id, which the trace's events carry as their
        # tid: the grader finds operators run on any other thread (see ``report``).
        self.native_ids: set[int] = set()
        self.first_task: int | None = None  # see _unhooked_threads
        self.active = False
        self._verdicts: dict[int, tuple[types.CodeType, bool]] = {}
        self._genuine: dict[str, set[types.CodeType]] = {}
        self.frames_seen: list[Any] = []
        self.marks = 0  # the step marks the hook saw
        self.trace_marks = 0  # the trace marks the trace function saw
        self.broken = [False]  # set when the hook failed on an event (see _make_hook)
        self.hook = self._make_hook()
        self.tracer = self._make_tracer()
        _addaudithook(self._make_audit_hook())

    def _programs(self, code: types.CodeType) -> bool:
        """Whether code is the program's (anything but torch's or the runner's own)."""
        verdict = self._verdicts.get(id(code))
        if verdict is not None:
            return verdict[1]
        filename = _filename(code)
        programs = True
        if filename.startswith(TRUSTED_ROOTS):
            codes = self._genuine.get(filename)
            if codes is None:
                codes = self._genuine[filename] = _codes_of(filename)
            programs = code not in codes
        self._verdicts[id(code)] = (code, programs)
        return programs

    def _record(self, label: str) -> None:
        if label in TAMPERING:
            if "redispatch" in label or label in (OP_DK, KERNEL_CALL):
                why = "it runs operators without recording them"
            elif label == UNWATCHED_STARTER:
                why = "the threads it starts run with no hook"
            elif label.startswith("torch._C._autograd."):
                why = "the profiler's session is the runner's"
            elif label == PROFILER_QUERY:
                why = "a program may run otherwise when nobody profiles it"
            else:
                why = "it may blind the runner's watch"
            finding = f"the program called {label} ({self.where}): {why}"
            if label == PROFILER_QUERY:
                finding = f"the program asked whether the profiler is on ({self.where}): {why}"
            if finding not in self.violations and len(self.violations) < 20:
                self.violations.append(finding)
            return
        self.counts[label] = self.counts.get(label, 0) + 1

    def _make_hook(self) -> Any:
        """The profile hook. An exception inside a profile hook makes the interpreter drop
        it from the thread: one raised where no raise is meant (a program that runs near
        the recursion limit, say) is caught and marks the watch broken, a finding. A call
        that reaches for the runner's objects (``REACHING``) is refused by a raise on
        purpose, after it is recorded: the call never runs, and the thread goes on
        unhooked, which the step's mark shows."""
        observe, broken = self._observe, self.broken

        def hook(frame: types.FrameType, event: str, arg: Any) -> None:
            try:
                refuse = observe(frame, event, arg)
            except BaseException:
                broken[0] = True
                return
            if refuse:
                raise RuntimeError("the profile runner refuses this call")

        return hook

    def _observe(self, frame: types.FrameType, event: str, arg: Any) -> bool:
        """One profile event; True when the call must be refused (see ``_make_hook``)."""
        if not self.active:  # a thread still hooked after the watch ended
            _setprofile(None)
            return False
        if event == "c_call":
            if arg is STEP_MARK or arg is THREAD_MARK:
                if arg is STEP_MARK:
                    self.marks += 1
                else:
                    self.watched.add(_get_ident())
                    self.native_ids.add(_get_native_id())
                return False
            if frame.f_code is _STARTER_CODE:  # the starter takes the hooks to hand on
                return False
            checks = _C_FUNCTIONS.get(arg.__name__)
            if checks is None:
                return False
            label = next((name for name, check in checks if check(arg)), None)
            if label is None:
                return False
            caller: types.FrameType | None = frame
        elif event == "call":
            entry = _PYTHON_FUNCTIONS.get(id(frame.f_code))
            if entry is None:
                return False
            label, caller = entry[0], frame.f_back
            if id(frame.f_code) in _SAVE_CODES:
                chosen = frame.f_locals.get("pickle_module", _pickle)
                if chosen is not _pickle:
                    self._record(FOREIGN_PICKLER)
            if label in (OP_DK, PROFILER_QUERY, REDISPATCH):
                # The program's own call only (see OP_DK, PROFILER_QUERY): torch's own
                # custom operators redispatch for the program, and record what they run.
                if caller is not None and caller.f_code is _getattribute_code:
                    caller = caller.f_back
                caller = self._past_relays(caller, _CALLEE_NAMES[label])
                if caller is not None and self._programs(caller.f_code):
                    self._record(label)
                return False
        else:
            if event == "c_return" and _gc_isenabled():
                # The collector stays off while the program's objects exist (see
                # profile_runner.main): a program that turns it on has it turned off.
                _gc_disable()
            return False
        if self._for_the_program(caller, copies=label in _COPIES):
            self._record(label)
            return label in REACHING
        return False

    def _make_tracer(self) -> Any:
        """The trace function (``sys.settrace``): it follows every frame for its
        exceptions alone (no line events). An exception that C code raised into a frame
        working for the program, of a kind that can carry a value, counts as a host
        read: a CPU operator that refuses a value puts the value in its message
        (``index 37 is out of bounds``, from an index, ``gather``, ``take`` or
        ``cross_entropy``), and the program can parse it back. It counts once, at the
        frame it was raised into, whoever handles it."""
        raise_, reraise = dis.opmap["RAISE_VARARGS"], dis.opmap["RERAISE"]
        carries, label = _carries_a_value, ERROR_FROM_C

        def in_frame(frame: types.FrameType, event: str, arg: Any) -> None:
            if event != "exception" or not self.active:
                return
            try:
                kind, error, traceback = arg
                if traceback.tb_next is not None or not carries(kind, error):
                    return  # seen already where it was raised, or carries no value
                instruction = frame.f_code.co_code[traceback.tb_lasti]
                if instruction == reraise:
                    return
                # A raise statement in code of the program's counts too: the class it
                # raises may call C code as it is made (a metaclass's __call__).
                if instruction == raise_:
                    ours = self._programs(frame.f_code)
                else:
                    ours = self._for_the_program(frame)
                if ours:
                    self._record(label)
            except Exception:  # an exception here would switch tracing off
                self._record(label)

        broken = self.broken

        def tracer(frame: types.FrameType, event: str, arg: Any) -> Any:
            try:
                if not self.active:  # a thread still traced after the watch ended
                    _settrace(None)
                    return None
                if frame.f_code is _TRACE_MARK_CODE:
                    self.trace_marks += 1
                frame.f_trace_lines = False
            except BaseException:  # raised, the interpreter would drop the trace function
                broken[0] = True
            return in_frame

        return tracer

    def _for_the_program(self, frame: types.FrameType | None, copies: bool = False) -> bool:
        """Whether a read was made on the program's behalf: the nearest frame below it
        that is not torch's is the program's. Torch's Python code calling a read for the
        program (``tree_map`` handed ``Tensor.tolist``, ``torch._numpy``'s ``tolist``)
        counts; a view taken inside another watched function (``Tensor.__array__``
        calling ``numpy``) is that one's, counted once, and so is a watched function's
        call of its own C method; a copy (``copies``) made deeper inside one counts on
        its own, for the frame the search goes on to find. The nearest frame may be
        the runner's: its own reads (``readers``) are not the program's, but any other
        runner frame can only be below a read that C code made for the program (a
        finalizer of the program's, run as a call's frame is released; a chain of C
        callables started from a torch frame), and that read counts."""
        python_functions = _PYTHON_FUNCTIONS
        nearest = frame
        while frame is not None:
            code = frame.f_code
            if id(code) in python_functions:
                # A watched function's own call (a wrapper calling its C method) is
                # that one's; a copy deeper down counts on its own (see _COPIES).
                if not copies or frame is nearest:
                    return False
                frame = frame.f_back
                continue
            if self._programs(code):
                return True
            if id(code) in _THREAD_ENTRY:  # a thread of the program's, C callables first
                return True
            if _filename(code).startswith(RUNNER_ROOTS) and id(code) not in _PASSING:
                # One of the runner's reading functions reads for the program when the
                # program called it (its module is within reach through sys.modules).
                caller = self._past_relays(frame.f_back, frozenset({code.co_name}))
                own = id(code) in self.readers
                return not own or (caller is not None and self._programs(caller.f_code))
            frame = frame.f_back
        return False

    def _past_relays(
        self, frame: types.FrameType | None, names: frozenset[str]
    ) -> types.FrameType | None:
        """The frame that chose a call: ``frame``, or, while that is a torch frame whose
        code names none of ``names`` (it ran a callable handed to it), the one below."""
        while (
            frame is not None
            and not self._programs(frame.f_code)
            and _filename(frame.f_code).startswith(TORCH_ROOTS)
            and names.isdisjoint(frame.f_code.co_names)
        ):
            frame = frame.f_back
        return frame

    def _make_audit_hook(self) -> Any:
        """An audit hook, added before any program code exists: it refuses every later
        audit hook (so that no code of the program's runs inside the runner's own
        audited calls, such as the open of the trace), and records the events of
        ``AUDITED`` that the program's code raises while the watch is on."""
        audited, getframe = AUDITED, sys._getframe
        carries = _carries_a_value
        busy = [False]

        def audit(event: str, _args: Any) -> None:
            if event == "sys.addaudithook":
                if len(REFUSED) < 20:
                    REFUSED.append("sys.addaudithook")
                raise RuntimeError("the profile runner refuses audit hooks")
            if event == "sys.unraisablehook":
                # An error a finalizer raised, handed to sys.unraisablehook (whoever's)
                # without ever entering a frame: it counts as the trace function counts
                # one raised into a frame. The runner's own code raises none.
                if self.active:
                    error = _args[1].exc_value
                    if error is not None and carries(type(error), error):
                        self._record(ERROR_FROM_C)
                return
            label = audited.get(event)
            if label is None or not self.active or busy[0]:
                return
            busy[0] = True
            try:
                caller = self._past_relays(getframe(1), _AUDITED_NAMES[label])
                refuse = caller is not None and self._programs(caller.f_code)
                if refuse:
                    self._record(label)
            finally:
                busy[0] = False
            if refuse and label in REACHING:
                raise RuntimeError("the profile runner refuses this call")

        return audit

    def start(
        self, warmup: int, steps: int, program_thread: int, count_tasks: bool = False
    ) -> None:
        """On, before the program is imported (from the runner's main thread; the hooks go
        on the program's thread with ``install``). Threads the program starts from now
        on are started by ``start_new_thread``, which hands them the hooks.
        ``count_tasks``: the process has a PID namespace of its own (the sandbox's), in
        which the kernel numbers every thread it starts (see ``_unhooked_threads``)."""
        self.first_task = _last_task_id() if count_tasks else None
        self.warmup = [{} for _ in range(warmup)]
        self.steps = [{} for _ in range(steps)]
        self.watched = {program_thread}
        self.native_ids = {_main_native_id}
        self.active = True
        for module, name in _STARTERS:
            _module_dict(module)[name] = start_new_thread

    def install(self) -> None:
        """The hooks, on the calling thread: the program's, before any program code exists
        (the runner's job that calls this is dropped before the next one runs, so from
        then on only the interpreter holds the hooks)."""
        self.native_ids.add(_get_native_id())
        _settrace(self.tracer)
        _setprofile(self.hook)

    def begin_warmup(self, index: int) -> None:
        self.where, self.counts = f"in warm-up call {index}", self.warmup[index]

    def begin_step(self, k: int) -> None:
        self.where, self.counts = f"in step {k}", self.steps[k]

    def end_step(self, k: int) -> None:
        """After profiled step k's call, which the program's thread followed with the step
        mark and the trace mark: both hooks still in place there (a hook removed cannot
        be put back by anyone: nothing the program reaches holds it, and without it the
        marks go unseen), and no unwatched thread."""
        self.where, self.counts = "between the steps", self.between
        if self.marks != k + 1:
            self.violations.append(
                f"the runner's profile hook was removed or replaced during step {k}"
            )
            self.marks = k + 1
        if self.trace_marks != k + 1:
            self.violations.append(
                f"the runner's trace function was removed or replaced during step {k}"
            )
            self.trace_marks = k + 1
        frames = _current_frames()
        self.frames_seen.append(frames)  # dropped here, a frame could free the program's objects
        if set(frames) - self.watched - {_main_ident}:
            self.unwatched_steps.append(k)

    def stop(self) -> None:
        """Off: after the last profiled step (or when the run failed). The hooks drop
        themselves at their thread's next event."""
        self.active = False
        self._unhooked_threads()
        for module, name in _STARTERS:
            namespace = _module_dict(module)
            if exact_get(namespace, name) is not start_new_thread:
                label = "_thread" if module is _thread else "threading"
                self.violations.append(f"the runner's {label}.{name} was replaced")
            namespace[name] = _start_new_thread
        if self.broken[0]:
            self.violations.append(
                "the runner's profile hook failed on one of the program's calls (a program "
                "that runs near the recursion limit, say): what followed went unwatched"
            )
        # The refused wrappers' list is the module's own: only the labels they put there
        # (exact strs; anything else the program added runs no code here).
        for label in dict.fromkeys(label for label in list(REFUSED) if type(label) is str):
            if label == "sys.addaudithook":
                why = "its code would run inside the runner's own calls"
            elif label.endswith("_enable_record_function"):
                why = "operators would run without being recorded"
            else:
                why = "it reads or runs in C++ where no trace or hook looks"
            self.violations.append(f"the program called {label}: {why}")

    def _unhooked_threads(self) -> None:
        """A finding for threads started while the watch was on that never ran the
        watch's thread entry. Whatever starter the program found (one the watch did not
        replace, called from C where no hook sees the call), the kernel gave its thread
        the next task id of the sandbox's PID namespace, where only this process starts
        tasks: every id handed out since ``start`` must be a watched thread's. A thread
        that ran and ended within a step leaves no frame for any later check to see."""
        first = self.first_task
        if first is None:
            return
        last = _last_task_id()
        if last is None or last < first:  # unreadable, or the ids wrapped: not counted
            return
        unhooked = [tid for tid in range(first + 1, last + 1) if tid not in self.native_ids]
        if unhooked:
            self.violations.append(
                f"{len(unhooked)} thread(s) or process(es) were started while the program "
                "ran that the runner's hooks never watched: what they did is not counted"
            )

    def report(self) -> dict[str, Any]:
        return {
            "import": dict(self.imported),
            "between": dict(self.between),
            "warmup": [dict(counts) for counts in self.warmup],
            "steps": [dict(counts) for counts in self.steps],
            "unwatched_steps": list(self.unwatched_steps),
            # Threads the hooks watch, by kernel id: the runner's own, the program's and
            # those it started. A thread torch starts in C++ and runs Python on (the
            # autograd engine's, for a backward nested past its depth limit) has no frame
            # between its tasks, so no step's check of frames sees it; its operators show
            # in the trace under a tid not listed here.
            "threads": sorted(self.native_ids),
        }


# The labels of reads that copy values out (each is one host read; the grader's
# ``COPY_READS`` names the same). A copy made inside another watched function counts on
# its own, for whoever the search below both finds: a watched function of torch's can
# run callables the program handed it (``Tensor.__reduce_ex__`` calls an instance's
# ``__getstate__``; a ``partial`` of ``list`` over ``map(Tensor.tolist, ...)`` read
# with that frame nearest). A view inside another (``__array__`` calling ``numpy``)
# stays that one's.
_COPIES = frozenset(
    {
        "Tensor.tolist",
        "Tensor.__reduce_ex__",
        "torch.save",
        "Generator.set_state",
        "torch._C._pickle_save",
        "UntypedStorage._write_file",
        "UntypedStorage.__getitem__",
    }
)


# The first frame of every thread the program starts (``_thread_entry``): a read with
# it nearest was made by the thread's C callables, for the program (the runner starts no
# thread while the watch is on).
# A frozenset, not an int: the runner checks its names' values by identity, but not
# those of numbers and strings.
_THREAD_ENTRY = frozenset({id(_thread_entry.__code__)})
_STARTER_CODE = start_new_thread.__code__
_TRACE_MARK_CODE = trace_mark.__code__
