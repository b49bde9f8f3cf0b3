"""What runs on the program's thread (see ``profile_runner.main``).

Every piece of a run that touches the program's objects or runs code the program
could have replaced (its import and calls, torch's Python code, the profiler's
start and stop, the copy of what a call returned) is one of the jobs below, run on
a thread of its own by ``_serve``. A frame of that thread is within the program's
reach (``sys._getframe``, a traceback's ``tb_frame``) and shows its globals: this
module's, which hold nothing of the runner's. The jobs work on the run's own
objects (``ctx``: the inputs, the program's entry, the profiler, the open
record_function windows) and hand back plain data.
"""

from __future__ import annotations

import dis
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.utils._device as torch_device
from harness import protocol
from harness.runner import describe, import_file, seed_everything
from profile_runner.watch import STEP_MARK, trace_mark
from torch._C._profiler import _ExperimentalConfig

# The sandbox starts the runner in its work dir (/work); read from there rather than
# from a fixed path, so that the same runner works where the work dir lies elsewhere
# (the unsandboxed backend of bench/gpu_profiling.py).
WORKDIR = Path.cwd()
PROGRAM_ROOT = WORKDIR / "program"
TASK_ROOT = WORKDIR / "task"
TRACE_PATH = WORKDIR / "out" / "trace.json"
TRACE_FILE = str(TRACE_PATH)
STEP_NAME = "ProfilerStep#{k}"
CANARY_NAME = "bw_canary#{k}/{nonce}"
PROGRAM_NAME = "bw_program/{nonce}"
KEEP_NAME = "bw_keep#{k}/{nonce}"

# Captured when this module is imported, before any program code exists: the runner
# drives the profiler through these, whatever the program later does to torch.
_perf_counter = time.perf_counter
_profile = torch.profiler.profile
_profile_enter = torch.profiler.profile.__enter__
_profile_exit = torch.profiler.profile.__exit__
_record_function = torch.profiler.record_function
# The runner's own windows (the program's, each step's) are opened and closed, and the
# profiler's session stopped and its trace saved, by C functions alone: no Python code
# of torch's (whose names the program can rebind) and no attribute of an object the
# program can reach (a window's or the profiler's ``__exit__``, set on the instance) runs
# in between. The stop comes after the watch is off, where code of the program's would
# run unwatched, free to edit the trace before the runner reads it.
_window_enter = torch.ops.profiler._record_function_enter_new.default._op
_window_exit = torch.ops.profiler._record_function_exit._RecordFunction._op
_Handle = torch._C.ScriptObject  # what _window_enter hands back
# No __torch_function__ of anyone's (a class attribute set on ScriptObject, a mode the
# program left pushed) runs inside the ops: a C context manager, on an immutable type.
_NoTorchFunction = torch._C.DisableTorchFunction
_disable_profiler = torch._C._autograd._disable_profiler
_ProfilerResult = torch._C._autograd._ProfilerResult
_result_save = _ProfilerResult.save
_result_start_ns = _ProfilerResult.trace_start_ns
# The dispatcher's thread-local keys: with a dispatch mode pushed, or the Python
# dispatcher on, an operator (the windows' too) would run Python code of the program's.
_include_keys = torch._C._dispatch_tls_local_include_set
_exclude_keys = torch._C._dispatch_tls_local_exclude_set
_keys_repr = torch._C.DispatchKeySet.__repr__
_cuda_memory_stats = getattr(torch._C, "_cuda_memoryStats", None)
_cuda_device = getattr(torch._C, "_cuda_getDevice", None)
_cuda_sync = getattr(torch._C, "_cuda_synchronize", None)
_len, _type, _int = len, type, int
_activity = torch.profiler.ProfilerActivity
_canary_op = torch.ops.aten.add.Tensor
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._len_torch_function_stack
_DTYPE_NAMES = dict(protocol.DTYPE_NAMES)
_pack_scalar = protocol.pack_scalar
# torch._C.TensorBase is immutable: these are the C methods, whatever torch.Tensor holds.
_TB = torch._C.TensorBase
_detach, _to, _contiguous, _reshape = _TB.detach, _TB.to, _TB.contiguous, _TB.reshape
_view, _numel, _as_numpy = _TB.view, _TB.numel, _TB.numpy
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled
# The one torch-function mode torch itself keeps pushed: torch.set_default_device's.
_DeviceContext = torch_device.DeviceContext
_function_mode_at = torch._C._get_function_stack_at
# The profiler's own record of each call, read after it stops: a call whose scope is a
# TorchScript function ran in the JIT's interpreter, whose prim:: operators (prim::tolist
# reads tensor memory) no trace event and no Python hook shows.
_result_events = torch._C._autograd._ProfilerResult.events
_event_scope = torch._C._autograd._KinetoEvent.scope
_event_name = torch._C._autograd._KinetoEvent.name
_TORCHSCRIPT_SCOPE = int(torch._C._profiler.RecordScope.TORCHSCRIPT_FUNCTION.value)
_cuda_synchronize = torch.cuda.synchronize
_str = str.__str__


def _synchronize() -> None:
    if torch.cuda.is_available():
        _cuda_synchronize()


# -- packing what a call returned -----------------------------------------------------


def _opaque(value: Any) -> dict[str, Any]:
    kind = type(value)
    what = "object"
    if isinstance(value, torch.Tensor):
        what = "tensor"
    elif isinstance(value, list | tuple | dict):
        what = "container"
    return {"k": "opaque", "cls": f"{kind.__module__}.{kind.__qualname__}", "what": what}


def _tensor_bytes(tensor: Any) -> memoryview:
    """A copy of a tensor's bytes, made with tensor methods captured from torch's C type
    at start: a program that replaces ``torch.Tensor.detach`` (or any method) runs no
    code of its own inside the runner's copy."""
    flat = _reshape(_contiguous(_to(_detach(tensor), "cpu")), (-1,))
    if _numel(flat) == 0:
        return memoryview(b"")
    return memoryview(_as_numpy(_view(flat, torch.uint8)).tobytes())


def pack_value(value: Any, blobs: list[memoryview], depth: int = 0) -> dict[str, Any]:
    """A value tree of what a call returned, its tensors' bytes copied into ``blobs``
    (what the grader compares is what the call returned, whatever the program does
    later): plain tensors (with their device type), lists, tuples, dicts with scalar
    keys, and scalars, each of exactly its builtin type; anything else becomes an
    ``opaque`` leaf that names its type, for the grader to refuse."""
    if depth > protocol.MAX_TREE_DEPTH:
        raise protocol.ProtocolError("value nested too deeply")
    kind = type(value)
    if kind is torch.Tensor:
        dtype = _DTYPE_NAMES.get(value.dtype)
        if value.layout is not torch.strided or dtype is None:
            return _opaque(value)
        blobs.append(_tensor_bytes(value))
        node = {"k": "tensor", "dtype": dtype, "shape": list(value.shape), "blob": len(blobs) - 1}
        node["device"] = value.device.type
        return node
    scalar = _pack_scalar(value)
    if scalar is not None:
        return scalar
    if kind is list or kind is tuple:
        items = [pack_value(item, blobs, depth + 1) for item in value]
        return {"k": "list" if kind is list else "tuple", "items": items}
    if kind is dict:
        pairs = []
        for key, item in value.items():
            key_node = _pack_scalar(key)
            if key_node is None:
                return _opaque(value)
            pairs.append([key_node, pack_value(item, blobs, depth + 1)])
        return {"k": "dict", "items": pairs}
    return _opaque(value)


# -- the thread and its jobs ---------------------------------------------------------


def _serve(mailbox: list[Any], go: Any, done: Any) -> None:
    """The program's thread: each job handed over in ``mailbox`` runs here and its outcome
    goes back the same way, until a job of None. Its frame holds the mailbox, the two
    locks and the job in hand: nothing of the runner's."""
    while True:
        go.acquire()
        where, job = mailbox.pop()
        if job is None:
            done.release()
            return
        try:
            outcome: tuple[str, Any] = ("done", job())
        except BaseException as exc:
            # A str subclass of the program's (its __str__ may return one) becomes a str.
            described = {key: _str(value) for key, value in describe(exc, where).items()}
            outcome = ("raised", described)
        del job
        mailbox.append(outcome)
        del outcome
        done.release()


# The line of ``_serve`` where the thread waits for its next job: the runner checks that
# the thread's only frame is ``_serve``'s, stopped there, before it trusts a job done.
PARKED_LINE = next(
    instruction.positions.lineno
    for instruction in dis.get_instructions(_serve)
    if instruction.argval == "acquire" and instruction.positions is not None
)


def _make_inputs(ctx: dict[str, Any], header: dict[str, Any]) -> None:
    """The inputs of every warm-up call and profiled step, before any program code runs."""
    make = import_file(TASK_ROOT / str(header["inputs_module"])).make_inputs

    def inputs(seed: int) -> tuple[Any, ...]:
        seed_everything(seed)
        args = make(seed)
        return tuple(args) if isinstance(args, list | tuple) else (args,)

    ctx["make"] = inputs
    ctx["warmup"] = [(seed, inputs(seed)) for seed in header["seeds"]["warmup"]]
    ctx["profiled"] = [(seed, inputs(seed)) for seed in header["seeds"]["profiled"]]


def _dispatch_keys() -> tuple[str, str]:
    return (_keys_repr(_include_keys()), _keys_repr(_exclude_keys()))


def _start_profiler(ctx: dict[str, Any], cuda: bool) -> tuple[str, str]:
    """The profiler's session, started before any program code exists (the profiler
    object is dropped: the session is stopped by ``_stop_profiler``, in C); hands back
    the dispatcher's thread-local keys as they are now."""
    ctx["canary"] = torch.zeros(1, device="cuda" if cuda else "cpu")
    TRACE_PATH.parent.mkdir(parents=True, exist_ok=True)
    activities = [_activity.CPU] + ([_activity.CUDA] if cuda else [])
    profiler = _profile(
        activities=activities,
        record_shapes=False,
        experimental_config=_ExperimentalConfig(
            profile_all_threads=True, enable_cuda_sync_events=cuda
        ),
    )
    _profile_enter(profiler)
    sys.path.insert(0, str(PROGRAM_ROOT))
    os.chdir(PROGRAM_ROOT)
    return _dispatch_keys()


def _open_window(ctx: dict[str, Any], name: str) -> None:
    with _NoTorchFunction():
        handle = _window_enter(name, None)
    ctx["windows"].append(handle)


def _close_windows(ctx: dict[str, Any], keep: int = 0) -> None:
    """Close the runner's open windows, innermost first, down to ``keep``. Only the
    handles ``_open_window`` made: anything else the program put in their place raises
    (a run whose windows cannot be closed is refused)."""
    windows = ctx["windows"]
    if _type(windows) is not list:
        raise TypeError("the runner's windows were replaced")
    while _len(windows) > keep:
        handle = windows.pop()
        if _type(handle) is not _Handle:
            raise TypeError("a window of the runner's was replaced")
        with _NoTorchFunction():
            _window_exit(handle)


def _install(ctx: dict[str, Any], install: Any, nonce: str) -> None:
    """The watch's hooks on this thread, then the program's window: everything the program
    does from its import to its last step counts, wherever it falls (work moved to the
    import or between the steps too)."""
    install()
    ctx["windows"] = []
    _open_window(ctx, PROGRAM_NAME.format(nonce=nonce))


def _import_program(ctx: dict[str, Any], header: dict[str, Any]) -> None:
    program = import_file(PROGRAM_ROOT / str(header["module"]))
    ctx["entry"] = getattr(program, str(header["entry"]))


def _warmup_call(ctx: dict[str, Any], index: int) -> None:
    seed, args = ctx["warmup"][index]
    ctx["warmup"][index] = None
    seed_everything(seed)
    ctx["entry"](*args)


def _step_call(ctx: dict[str, Any], k: int) -> None:
    """Profiled step k's call, in its step window, then the marks the watch's hooks must
    see (``Watch.end_step``)."""
    seed, args = ctx["profiled"][k]
    ctx["profiled"][k] = None
    seed_everything(seed)
    _open_window(ctx, STEP_NAME.format(k=k))
    ctx["out"] = ctx["entry"](*args)
    del args
    STEP_MARK()
    trace_mark()


def _step_keep(ctx: dict[str, Any], k: int, nonce: str, cuda: bool) -> tuple[Any, ...]:
    """The runner's copy of what step k returned, then its canary, both inside the step's
    window; the copy is left out of the counts (the grader checks that the window holds
    only the views and copies it takes). The collector is off (``Runner.run``): no
    finalizer of the program's runs inside the copy, where it would read as the runner;
    the program's objects die after it, where their reads count."""
    blobs: list[memoryview] = []
    with _record_function(KEEP_NAME.format(k=k, nonce=nonce)):
        node = pack_value(ctx["out"], blobs)
    del ctx["out"]
    # Inside the step window, so that a profiler stopped during the step shows; the
    # grader checks that it holds the canary op alone. On CUDA the step's device work is
    # waited for here, so the window's length includes it.
    with _record_function(CANARY_NAME.format(k=k, nonce=nonce)):
        modes = bool(_dispatch_modes() or _foreign_function_modes())
        _canary_op(ctx["canary"], ctx["canary"])
        if cuda:
            _synchronize()
    _close_windows(ctx, keep=1)
    finding = (
        f"a dispatch or torch-function mode was active at the end of step {k}: it could "
        "run work inside the runner's own operators"
    )
    return (node, blobs, finding if modes else None)


def _stop_profiler(ctx: dict[str, Any], cuda: bool, keys: tuple[str, str]) -> tuple[Any, ...]:
    """Close the windows still open, stop the profiler's session and save its trace,
    all in C (see ``_window_enter``): (findings, the CUDA memory peak). Run from the
    runner's sealed copy of this module, after the runner checked every name the
    program may not rebind: no code of the program's runs here. A dispatcher whose
    thread-local keys differ from the start's (a mode left pushed) would run the
    program's code inside the windows' operators: the windows stay open and that is
    reported. A session some other code ended first leaves an empty result, which
    torch cannot write (it crashes the process): that is reported instead."""
    findings = []
    if _dispatch_keys() == keys:
        _close_windows(ctx)
    else:
        findings.append(
            "the dispatcher's thread-local keys were left changed after the profiled steps "
            "(a dispatch mode left pushed, the Python dispatcher left on)"
        )
    if cuda and _cuda_sync is not None:
        _cuda_sync()
    result = _disable_profiler()
    peak = None
    if cuda and _cuda_memory_stats is not None and _cuda_device is not None:
        # torch.cuda.max_memory_allocated's figure, read from the allocator's own table.
        stats = _cuda_memory_stats(_cuda_device()).get("allocated_bytes", {})
        found = stats.get("all", {}).get("peak")
        peak = _int(found) if found is not None else None
    if _type(result) is not _ProfilerResult or _result_start_ns(result) == 0:
        findings.append("the profiler's session had already ended when the runner stopped it")
        return (findings, peak)
    _result_save(result, TRACE_FILE)
    return (findings + _torchscript_calls(result), peak)


def _time_batch(ctx: dict[str, Any], seeds: list[int], batch: Any, cuda: bool) -> Any:
    """A timed batch: its inputs, made now, then its steps back to back, ``perf_counter``
    around each; the reply carries the outputs."""
    inside: list[float] = []
    outputs: list[Any] = []
    ctx["where"] = "a timed batch's inputs"
    inputs = [(seed, ctx["make"](seed)) for seed in seeds]
    entry = ctx["entry"]
    for index, (seed, args) in enumerate(inputs):
        ctx["where"] = f"timed batch {batch} step {index}"
        seed_everything(seed)
        began = _perf_counter()
        outputs.append(entry(*args))
        if cuda:
            _synchronize()
        inside.append(_perf_counter() - began)
    ctx["where"] = "packing the outputs"
    blobs: list[memoryview] = []
    node = {"k": "list", "items": [pack_value(out, blobs) for out in outputs]}
    return (inside, node, blobs)


def _foreign_function_modes() -> int:
    """Torch-function modes on the stack other than torch.set_default_device's."""
    modes = (_function_mode_at(i) for i in range(_function_modes()))
    return sum(type(mode) is not _DeviceContext for mode in modes)


def _torchscript_calls(result: Any) -> list[str]:
    """A finding when TorchScript ran while the profiler recorded. The grading runs with
    TorchScript off (``PYTORCH_JIT=0``: ``torch.jit.script`` and ``torch.jit.trace``
    hand back the Python function, whose reads the watch sees), so TorchScript that ran
    was compiled another way (``torch.jit.CompilationUnit``, ``torch.jit.load``, the
    JIT switched back on) or named to pass for an operator: its reads are unseen."""
    names: dict[str, int] = {}
    for event in _result_events(result):
        if _event_scope(event) == _TORCHSCRIPT_SCOPE:
            name = str(_event_name(event))[:80]
            names[name] = names.get(name, 0) + 1
    if not names:
        return []
    shown = ", ".join(sorted(names)[:5])
    return [
        f"TorchScript ran in the program ({sum(names.values())} call(s): {shown}): "
        "its prim:: operators read tensor memory where no trace or hook looks, and a "
        "re-profile grading runs with TorchScript off (torch.jit.script gives the "
        "Python function back)"
    ]
