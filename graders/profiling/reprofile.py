"""Re-profiling a changed program: the trusted side of a fix-and-re-profile grading.

The solver gets a small PyTorch program with a planted performance problem (a
host sync inside the step, a Python loop that launches an operator per
element) and submits the changed program. ``reprofile`` runs the task's
original program (the reference: slow but correct) and the submission, each in
a sandboxed process of its own, under ``torch.profiler``; checks that the
submission still returns what the reference returns on inputs drawn from a
secret seed; and measures whether the planted signal dropped.

How a grading runs
------------------
1. Both sandboxes start the runner (``profile_runner/main.py``), which
   imports torch and captures what it relies on; neither has seen program
   code yet. The inputs module (the task's ``make_inputs(seed)``) is written
   into both; the reference's sandbox holds only the reference program, the
   submission's only the submission.
2. ``run``, the reference first, then the submission, each while the other
   sandbox is frozen: the inputs of the warm-up calls and the profiled steps
   are made from seeds derived from the secret one before the program is
   imported; the profiler starts before the import; the runner's
   ``bw_program/<nonce>`` window spans the import, the warm-up calls and the
   ``steps`` profiled steps, each a ``ProfilerStep#k`` window closed by the
   runner's canary op. The reply carries the trace itself (written by torch's
   C++, read back by the runner) and the steps' outputs, before any program
   code runs again. The last profiled step's inputs come from the grading's
   secret seed itself. Every call whose outputs are compared is profiled and
   watched alike, except the timed batches of a ``step_time`` task (whose
   signal is the time itself): a program that takes a fixed path only while
   it is profiled has shown the grader nothing else, and the counts are taken
   on that path. (A compared call left unprofiled would let a program keep
   its host reads for that call alone.)
3. For ``step_time`` only: ``repeats`` timed batches per side, in pairs that
   alternate which side goes first (reference, submission, submission,
   reference, ...), each measured from outside while the other side is
   frozen; a batch's seeds come with its command, so its inputs do not exist
   before it.
4. Every call's outputs are copied out as soon as the runner can (the profiled
   steps' once the profiler has stopped), come back packed (the kernel
   harness's protocol) and are compared here, call by call, within the task's
   per-dtype tolerances (``graders.kernel.compare``). Each trace is collected
   from the ``run`` reply and parsed here, with bounds.

The signals, counted from each trace over the program's window (an event
belongs to it when it starts inside it, on any thread; what is nested in the
runner's canary is left out) and reported per ``ProfilerStep#k`` window too
(an event belongs to the step whose window holds its start). ``syncs`` and
``launches`` are scored per call: everything in the program's window,
divided by the warm-up calls and steps, so that work moved to the import,
into a warm-up call or between the steps still counts:

- ``syncs``: host reads of a device value. The candidates are the ``cpu_op``
  events ``aten::_local_scalar_dense``, ``aten::item`` and
  ``aten::is_nonzero``, the operators whose answer's size or value the host
  waits for (``aten::nonzero``, ``aten::equal``, ``aten::masked_select``,
  ``unique``, ``repeat_interleave``: a count read as the rows of
  ``t.nonzero()`` records no item on a CPU host, and blocks a CUDA one), the
  operators that size their answer from values read on the host
  (``tensor_split`` given a tensor of indices, ``bincount``,
  ``_pack_padded_sequence``, a sparse tensor's inferred size: a value read
  back as a shape), and,
  on CUDA, the ``cuda_runtime`` calls that block the host
  (``SYNC_RUNTIME_CALLS``). One read shows as a nested chain
  (``bool(t)`` is ``is_nonzero`` around ``item`` around
  ``_local_scalar_dense``, which on CUDA holds ``cudaStreamSynchronize``), so
  a candidate counts only when no other candidate is nested inside it: each
  chain counts once, by its innermost event, whatever the wrapper was.
  Added to these, per step: the host reads outside the dispatcher that the
  runner's profile hook saw (``profile_runner/watch.py``; reported in
  ``host_reads_per_step`` and by label in ``host_reads``). On a CPU host
  ``t.tolist()``, ``t.numpy()``, ``np.asarray(t)`` (and any NumPy function
  that converts a tensor), DLPack, ``t.data_ptr()``, ``t.untyped_storage()``,
  ``t.storage()``, pickling, ``torch.save``, ``torch.from_numpy`` and ctypes'
  ``from_address`` / ``cast`` / ``string_at`` record no ``aten::item``; each
  call of one of them made for the program's code (the nearest frame below the
  call that is not torch's is the program's: its files, NumPy, the standard
  library; torch's Python code calling a read it was handed, ``tree_map(Tensor.tolist, ...)``,
  reads for the program; the runner's own reads, below which no program frame
  lies, do not count) is one sync in the step it happens in, on any thread the
  hook watches. A syncs task may take no view of tensor or shared memory at all
  (``numpy()``, ``data_ptr()``, storages, DLPack, ``torch.from_numpy``,
  ``torch.as_tensor`` over a NumPy array, ...): reads through a view are plain
  memory and it counts once, so one is an integrity finding; ``.item()`` and
  ``.tolist()`` copy and are counted. On a CUDA host such a read also shows as
  a copy in the trace, so it may count twice there.
- ``launches``: operators that run, i.e. ``aten::`` ``cpu_op`` events with
  no ``aten::`` operator nested inside them (the innermost, as for syncs).
  Counting what wraps instead would let a program hide a loop inside one
  operator: an op of its own registered in the ``aten`` namespace, or a
  tensor subclass whose ``__torch_dispatch__`` runs the loop under an
  ordinary ``aten::alias``. Work
  done outside torch (NumPy on ``t.numpy()``, Python on ``t.tolist()``)
  launches no operator; any host read the hook sees in a profiled step of a
  ``launches`` task is therefore an integrity finding, not a count: counted
  as one launch, a NumPy rewrite would score like the honest vector fix.
- ``step_time``: each ``ProfilerStep#k`` window's length is reported, but the
  ratio and its significance come from the timed batches: per batch, the CPU
  time the sandbox's cgroup counted (every thread of every process in it)
  between freezes around the batch, over its steps (on CUDA hosts, the
  grader's wall clock around the batch instead). The runner's own
  ``perf_counter`` per step is kept only as a cross-check. The figure
  includes the runner's handling of the command, the same on both sides: it
  pulls the ratio towards 1 and can only hide a speedup, never make one, so
  a step-time task needs steps long enough, or enough of them, to show its.
  The repeats are batches in one process per side, not fresh processes.

``signal_ratio`` is the submission's signal over the reference's: per call
over the run for ``syncs`` and ``launches``, or the submission's worst
profiled step over the reference's mean step where that is higher
(``significant`` when the
submission's is lower and every profiled step of the submission has fewer
than every step of the reference: the counts are deterministic); for
``step_time``, the median of the pairs'
ratios, significant when the sign-test interval of the pairs' log ratios lies
wholly beyond ``MIN_EFFECT`` (six pairs or more), or, with fewer pairs, when
the bootstrap intervals of the two sides' medians separate and the ratio is
beyond ``MIN_EFFECT`` (``graders.stats``).

Integrity
---------
The submission shares its process with the profiler and can do anything to
it. What counts is what the trace shows, checked here: exactly ``steps``
windows named ``ProfilerStep#0`` ... ``#steps-1`` inside exactly one program
window, each holding exactly one canary window (``bw_canary#k/<nonce>``, the
nonce fresh per grading) with the canary's ``aten::add`` in it and no other
operator (work run inside the runner's op, by a dispatch mode or a kernel
registered over ``aten::add``, would go uncounted); the runner's windows
copying each step's outputs (``bw_keep#k/<nonce>``) hold only the views and
copies that takes; no operator runs outside the program's window while the
profiler records (work hidden in the profiler's own stop, say). The trace
leaves the process in the ``run`` reply, read back as soon as torch's C++
wrote it: a file the program rewrites later is never read, and no audit hook
of the program's can sit in the runner's open (the runner's own refuses
them). The runner's windows are the C handles of torch's record-function
operators, and its stop (the windows closed, the session ended, the trace
saved) is C calls alone, run from a sealed copy of its module after the last
check of what the program may not rebind: no code of the program's runs
between that check and the trace's read. The session's switches
(``_enable_profiler``, ``_disable_profiler``, ``_toggle_collection_dynamic``
and their kin) called by the program are tampering. A profiler
stopped, restarted or switched off at any point of the profiled steps loses a
canary or a window: torch records nothing after the session ends, a new
session has none of the earlier events, and CPU collection switched off
(``_toggle_collection_dynamic``) cannot be switched back on in an every-thread
session. (Ending the session with
``torch.autograd._disable_profiler()`` leaves nothing to write, which the
runner reports; restarting one inside a step window corrupted torch's heap
here, a crash.) A trace that is missing or does not parse is a finding too. The
runner adds what it sees in the process: the profiler's functions,
``Tensor.item`` and its kin replaced (identity against objects captured
before the import), the profiler's session ended by someone else, a dispatch
or torch-function mode active at a step's canary, a thread of the program
still running when the profiler stops (it could change what the steps
returned before they are copied, or work where no window counts it). Outputs of
a type other than plain tensors, containers and scalars are a finding
(``compare_outputs``).

Host reads the trace cannot show (see ``syncs``) are watched by the runner's
profile hook from the program's import to the end of the profiled steps
(not during the timed batches). A call the hook cannot see (a C read method
called from C, the original the watch keeps reached through its module) still
leaves a mark for ``tolist`` and ``numpy`` on a CPU host (``C_READ_MARK``):
marks beyond the reads the hook counted are reads too. Findings, for the
``syncs`` and ``launches`` signals: a view of tensor memory (anything but
``tolist``, pickling and ``torch.save``, which copy) taken at import, or
views that differ between calls (warm-up calls and steps), since reads
through a view kept from an earlier call are invisible; a Python thread the
hook does not watch (threads started while it is on are watched) alive at a
step's end; a thread started while the hook was on that never ran the
watch's thread entry (the sandbox's PID namespace numbers every thread the
process starts, ``Watch._unhooked_threads``); on a CPU host, an operator in
the program's window on a thread the runner does not watch (the runner
reports its watched threads' kernel ids, the trace's tids: torch's autograd
engine runs a backward nested past its depth limit on a C++ thread of its
own, with no hook and, between its tasks, no frame for the step's check to
see); for ``launches``, any host read in a step. Always, from the runner:
the program calling ``sys.setprofile`` / ``settrace`` /
``getprofile`` / ``gettrace``, ``threading.setprofile`` / ``settrace``,
``gc.get_objects`` / ``get_referrers`` / ``get_referents``,
``sys._current_frames``, setting a frame's ``f_trace``, or starting a process
(``os.fork``, ``subprocess``) while the hook is on (the calls that would hand
the program the runner's objects are refused as well); a step after which the
program's thread's marks went unseen (its hook or trace function was gone).
An exception that C code raised into the program's
frames (an operator refusing an out-of-bounds index puts the index in its
message, as ``gather``, ``take`` and ``cross_entropy`` do) counts as a host
read that copies, wherever it is handled; so does a generator's
``set_state`` (its seed, read back with ``initial_seed()``, is eight bytes of
the tensor handed to it). A read whose nearest non-torch frame is the
runner's counts unless that frame is the runner's own copy of the outputs:
C code run for the program (a finalizer as the step's frame is released)
has the runner's frame newest. Findings against the submission go to
``Reprofile.integrity``; what the reference's run shows goes to
``Reprofile.task_problem``, since the reference is the task's own program.

What is not covered: the trace is written by the submission's process, so a
program that reads the runner's nonce out of its own memory and writes a
complete forged trace during its steps is not caught by these checks; the
outputs of every call are still checked, and step-time figures come from
outside. Switching recording off
(``torch.autograd._enable_record_function``, replaced in the process by a
function that reports the attempt), the dispatcher's redispatch
(``OpOverload.redispatch``, ``redispatch_boxed``, an overload's ``_op_dk``
called by the program) and a kernel called on its own (``call_boxed`` on what
``torch.library.get_kernel`` hands out): operators run unrecorded, and each
is a finding;
``redispatch_boxed`` called from C code (``map``) is not seen.
Every name the runner looks up as it runs (its modules', the harness's, its
classes' methods) is checked against what it held before the import: a
program that rebinds one (the runner's ``send``, to cut events from the trace
on its way out) is a finding. TorchScript is off in both sandboxes
(``PYTORCH_JIT=0``): ``torch.jit.script`` and ``torch.jit.trace`` hand back the
Python function, so a scripted fix runs as Python and its reads are seen like
any other. TorchScript that runs all the same (compiled with
``torch.jit.CompilationUnit``, loaded with ``torch.jit.load``, the switch turned
back on, a function made from a graph under an operator's name) is a finding:
in the JIT's interpreter ``prim::tolist`` reads tensor memory in C++ with no
``aten::`` event and no Python call. The runner finds it by the scope torch's
profiler gives each call (a TorchScript function's), which no name can fake. Refused on
purpose though sometimes honest: a tensor made with ``torch.from_numpy`` at
import or in one call only, a shared buffer being a channel for reads no
profiler sees (``torch.tensor(array)`` copies and is not refused; the
runner makes such tensors over a copy all the same, so that in a launches
task memory shared with the program cannot carry torch's writes out).
A program compiled with ``torch.compile`` starts a compiler process, which
the runner takes for tampering: compiled fixes cannot pass on a CPU host.
The runner's wrappers of the read
methods live on ``torch.Tensor`` and on ``torch._C.TensorBase`` itself (put in
the immutable type's dict), ``torch.as_tensor`` / ``torch.asarray`` likewise
on torch's C class of functions; the C methods they wrap are still held by the
runner's module (its globals, the wrappers' closures), and called from C code
(``map``) such a method gives the hook no event. The host reads are reported
by the same process, but nothing the program can reach leads to the records:
the program runs on a thread of its own whose frames hold nothing of the
runner's, the runner's thread runs sealed copies of its code
(``profile_runner.seal``) and no code of the program's, and the hooks are held
by the interpreter alone (``profile_runner.main``). Not caught: a program that
swaps the hook out and back through the C API (ctypes' ``pythonapi``, itself a
finding when loaded), or that plants, in a dict the runner reads, a key of a
str subclass whose hash collides with a name it looks up. In a launches
task, a view taken alike in every call counts once per call, however many reads
go through it (positions made with NumPy are honest there). Not seen at all:
addresses learnt from ``id()`` / ``_cdata`` and read with ctypes' foreign
functions (``memmove`` from its address, ``pythonapi``) or ``/proc/self/mem``;
memory shared through a route no wrapper covers (a NumPy array over a file
torch wrote, a tensor made by a torch function that imported ``as_tensor``
before the runner replaced it); operators that read values on the host to size
their answer beyond those listed; a value carried out by a warning torch
issued rather than an error; the routes in ``tests/graders/profiling/open_holes/``; reads
in a thread whose profile or trace function the program removed through the
C API. These are the limits of watching from
inside the process on a CPU host: on a CUDA host every read is a copy the
trace shows.

Nothing here raises on what the submission does: a crash, a hang, a reply
that does not parse becomes a ``SideMeasure`` with an error. ``SandboxError``
is raised only when the sandbox itself fails (a runner that does not start,
a reference sandbox that cannot be frozen): the platform's fault, never the
submission's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import random
import re
import secrets
import sys
import time
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from graders import stats
from graders.kernel.compare import compare_outputs
from graders.kernel.grading import MALLOC_ENV
from graders.kernel.harness.protocol import (
    MAX_TREE_DEPTH,
    ProtocolError,
    TreeWalker,
    check_tensor_node,
    copy_tensor,
    is_count,
    is_number,
    tensor_nbytes,
)
from graders.kernel.side import Reply, Side, SideFailure, clean_error, clean_text
from graders.kernel.spec import Tolerance
from sandboxes.base import Limits, RunRequest, RunResult, Sandbox, SandboxError, python_env
from sandboxes.cgroups import FreezeTimeout

Signal = Literal["syncs", "launches", "step_time"]
SIGNALS: tuple[str, ...] = ("syncs", "launches", "step_time")

RUNNER_DIR = Path(__file__).resolve().parent / "profile_runner"
HARNESS_DIR = Path(__file__).resolve().parent.parent / "kernel" / "harness"
MOUNT = "/opt/benchwright"
WORKDIR = "/work"
BOOTSTRAP = (
    f"import sys; sys.path.insert(0, {MOUNT!r}); from profile_runner.main import main; main()"
)
STARTUP_TIMEOUT_S = 120.0
DEFAULT_TIMEOUT_S = 120.0
OUTPUTS_TIMEOUT_S = 60.0
MiB = 1024 * 1024
SMALL_REPLY = 1 * MiB  # run and time replies: findings and figures only
REPLY_CAP = 256 * MiB  # the reference's outputs
REPLY_ROOM = 4 * MiB  # the submission's outputs may take twice the reference's and this
OUTPUT_CHARS = 4000

# Bounds on a trace (written by the submission's process): bytes and events parsed.
MAX_TRACE_BYTES = 64 * MiB  # a re-profile trace is a few MiB
MAX_TRACE_EVENTS = 500_000
MAX_CONTAINERS_PER_EVENT = 4
MAX_VALUES_PER_EVENT = 24
MAX_NAME_CHARS = 1000
# Kineto writes times in microseconds with three decimals: a child's end, rounded,
# may pass its parent's by that much.
NESTING_SLACK_US = 0.0015
TOP_OPERATORS = 15

# The runner's labels for host reads that only copy values out; every other label
# (unknown ones too) is a view: a live window on the tensor's memory. The runner's
# ``ERROR_FROM_C`` is an exception C code raised into the program's frames, whose
# message can carry a value the operator read; ``Generator.set_state`` copies eight
# bytes of a tensor into a generator's seed, which ``initial_seed()`` hands back.
COPY_READS = frozenset(
    {
        "Tensor.tolist",
        "Tensor.__reduce_ex__",
        "torch.save",
        "an error raised in C code",
        "Generator.set_state",
        "torch._C._pickle_save",
        "UntypedStorage._write_file",
        "UntypedStorage.__getitem__",
    }
)
# Calls that make a tensor over host memory (a NumPy array, a buffer): no tensor's memory
# is read, so a launches task does not take them for work moved out of torch.
WRAPS_HOST_MEMORY = frozenset(
    {"torch.from_numpy", "torch.frombuffer", "torch.as_tensor over host memory"}
)
MAX_READ_LABELS = 64
MAX_READS = 10**9  # per label and call: more is not a count the runner could have made

SCALAR_READS = frozenset(
    {
        "aten::_local_scalar_dense",
        "aten::item",
        "aten::is_nonzero",
        # Operators whose answer's size or value the host must wait for: each blocks on
        # a CUDA device, and on a CPU host records no item (a count read as the number
        # of rows of t.nonzero(), a flag as torch.equal).
        "aten::nonzero",
        "aten::equal",
        "aten::masked_select",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
        "aten::unique_dim_consecutive",
        "aten::repeat_interleave",
        # Operators that read values on the host to size what they return, with no item
        # recorded on a CPU host: a value read back as a shape (the length of the first
        # piece of tensor_split given a tensor of indices, the length of bincount's
        # answer, pack_padded_sequence's batch sizes, a sparse tensor's inferred size).
        # The trace does not say which overload ran, so each counts whatever its
        # arguments were; given device values, each blocks a CUDA host too.
        "aten::tensor_split",
        "aten::bincount",
        # A shape given as a tensor, read with an accessor: a value back as a dimension.
        "aten::_reshape_from_tensor",
        "aten::_pack_padded_sequence",
        "aten::_sparse_coo_tensor_with_dims_and_tensors",
        # A sparse tensor's number of entries, found by merging duplicates or dropping
        # zeros on the host: _nnz() hands it back with no operator.
        "aten::_coalesce",
        "aten::_to_sparse",
        "aten::_to_sparse_csr",
        "aten::_to_sparse_csc",
        "aten::_to_sparse_bsr",
        "aten::_to_sparse_bsc",
        # A nested tensor's sizes are a tensor's values, read back as its pieces' shapes.
        "aten::_nested_view_from_buffer",
        "aten::_nested_view_from_buffer_copy",
        "aten::_nested_tensor_from_mask",
        "aten::_nested_from_padded",
        "aten::_nested_from_padded_tensor",
        "aten::_nested_tensor_from_tensor_list",
        "aten::_pad_packed_sequence",
        # The CTC loss's alignment table is as long as the longest target: a value.
        "aten::_ctc_loss",
        # Operators whose schema returns a number or a flag computed from a tensor's
        # values (TorchScript's conversions, a list's search for an equal tensor, the
        # quantizer's scale of a weight found from its minimum and maximum). Every
        # aten operator returning a plain value is either here or, reading metadata
        # only, in the test that checks this list against torch's schemas.
        "aten::Bool",
        "aten::Int",
        "aten::Float",
        "aten::Complex",
        "aten::IntImplicit",
        "aten::FloatImplicit",
        "aten::ComplexImplicit",
        "aten::ScalarImplicit",
        "aten::__contains__",
        "aten::count",
        "aten::allclose",
        "aten::fbgemm_linear_quantize_weight",
        "aten::_choose_qparams_per_tensor",
        "aten::_nested_tensor_from_mask_left_aligned",
    }
)
# Sparse tensors, in any layout: their operators read the indices on the host to size
# what they return (multiplying two COO vectors intersects their indices, adding two CSR
# matrices counts the columns their rows share), with no sync recorded on a CPU host,
# and indices edited in place carry a new value into each such operator. A syncs or
# launches task takes any sparse tensor made or used in the program's window for a
# channel of host reads (a finding); no fix of a dense program needs one. An operator
# is a sparse one by its name (``is_sparse_operator``).
SPARSE_OPERATORS = frozenset(
    {
        "aten::_coalesce",
        "aten::coalesce",
        "aten::_nnz",
        "aten::_indices",
        "aten::_values",
        "aten::indices",
        "aten::crow_indices",
        "aten::col_indices",
        "aten::ccol_indices",
        "aten::row_indices",
    }
)


def is_sparse_operator(name: str) -> bool:
    return name.startswith("aten::") and ("sparse" in name or name in SPARSE_OPERATORS)


SYNC_RUNTIME_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpy2D",
        "cudaMemcpy3D",
        "cudaStreamQuery",
    }
)
# Errors writing a side's files into its work dir that the files themselves cause.
FILES_TOO_LARGE = (errno.ENOSPC, errno.EFBIG, errno.ENAMETOOLONG)
# What a sandbox limit that ended a process means for its side.
LIMIT_KINDS = {
    "wall_time": "timeout",
    "cpu_time": "timeout",
    "memory": "memory",
    "output": "output_limit",
    "file_size": "output_limit",
    "processes": "crashed",
}
KEPT_CATEGORIES = frozenset({"cpu_op", "user_annotation", "cuda_runtime"})
# The most threads a runner reports watching (the program may start a few).
MAX_WATCHED_THREADS = 4096
STEP_PATTERN = re.compile(r"ProfilerStep#(\d{1,9})")
PROGRAM_NAME = "bw_program/{nonce}"  # the runner's window around the program's run
CANARY_OP = "aten::add"
# What the runner's copy of a step's outputs runs (``protocol.tensor_bytes``: detach,
# to the CPU, contiguous, flattened, viewed as bytes).
COPY_OPERATORS = frozenset(
    {
        "aten::detach",
        "detach",  # autograd's own record of it, nested in aten::detach
        "aten::to",
        "aten::_to_copy",
        "aten::copy_",
        "aten::empty_strided",
        "aten::empty",
        "aten::contiguous",
        "aten::clone",
        "aten::empty_like",
        "aten::reshape",
        "aten::view",
        "aten::_reshape_alias",
        "aten::alias",
        "aten::as_strided",
        "aten::_unsafe_view",
        "aten::resolve_conj",
        "aten::resolve_neg",
    }
)

# A step-time speedup must clear this margin (as the kernel kind's does): two runs of
# identical code in two processes can differ by a few per cent.
MIN_EFFECT = 0.05


# -- what goes in and what comes out ------------------------------------------------------


@dataclass(frozen=True)
class ProgramSpec:
    """What a fix-and-re-profile task's grading table says (parsed by the kind)."""

    module: str  # the program file, relative to the program root ("train.py")
    entry: str  # called once per step: entry(*inputs) -> outputs
    inputs_module: str  # a hidden task file defining make_inputs(seed) -> tuple of args
    steps: int  # profiled steps per run, after the warm-up
    warmup: int
    signal: Signal
    repeats: int  # timed batches per side for step_time (at least 3), interleaved
    tolerances: Mapping[str, tuple[float, float]]  # dtype -> (atol, rtol)
    cuda: bool = False

    def __post_init__(self) -> None:
        if self.signal not in SIGNALS:
            raise ValueError(f"unknown signal {self.signal!r}; known: {', '.join(SIGNALS)}")
        if self.steps < 1 or self.warmup < 0:
            raise ValueError("steps must be at least 1 and warmup at least 0")
        if self.signal == "step_time" and self.repeats < 3:
            raise ValueError("a step_time task needs at least 3 repeats")


@dataclass(frozen=True)
class OperatorStat:
    """One operator over a side's profiled steps, for reviewers."""

    name: str
    count: int
    self_cpu_us: float  # its time less that of the events nested in it


@dataclass
class SideMeasure:
    """One side's run, as the grader saw it.

    ``error_kind``, empty when the side ran to the end: ``raised`` (the program
    raised; ``error`` says where), ``timeout``, ``crashed``, ``exited`` (the
    process ended with status 0 in the middle of a command), ``memory``,
    ``garbled`` (a reply that does not parse), ``output_limit`` (a trace too
    large to count) or ``refused`` (file names that cannot be placed in a
    sandbox)."""

    role: str
    outputs_ok: bool = False  # every call returned outputs that came back intact
    error: str = ""
    error_kind: str = ""
    traceback: str = ""
    integrity: list[str] = field(default_factory=list)
    signal_per_step: list[float] = field(default_factory=list)
    # The signal over the program's whole run (its import, warm-up calls and steps),
    # per call: what the ratio is taken from, for syncs and launches.
    signal_per_call: float | None = None
    signal_outside_steps: int = 0  # of that, what fell outside the step windows
    syncs_per_step: list[int] = field(default_factory=list)
    launches_per_step: list[int] = field(default_factory=list)
    # Host reads outside the dispatcher, seen by the runner's hook (already in
    # syncs_per_step): per profiled step, by label over those steps, and at import.
    host_reads_per_step: list[int] = field(default_factory=list)
    host_reads: dict[str, int] = field(default_factory=dict)
    host_reads_at_import: dict[str, int] = field(default_factory=dict)
    step_times_s: list[float] = field(default_factory=list)  # ProfilerStep#k windows
    timed_step_s: list[float] = field(default_factory=list)  # per step, one per timed batch
    inside_step_s: list[float] = field(default_factory=list)  # the runner's own clock
    top_operators: list[OperatorStat] = field(default_factory=list)
    peak_memory_bytes: int | None = None  # the sandbox's cgroup, read from outside
    cuda_peak_bytes: int | None = None  # torch.cuda.max_memory_allocated, in process
    output: str = ""  # the end of the process's output (program prints, warnings)
    # The profiler's Chrome trace as the sandbox left it, for reviewers (an artifact).
    trace: bytes | None = field(default=None, repr=False)

    def fail(self, kind: str, message: str) -> None:
        if not self.error_kind:
            self.error_kind, self.error = kind, clean_text(message, OUTPUT_CHARS)


@dataclass
class StepTiming:
    """The timed batches of a step_time grading, per step (seconds)."""

    method: str
    reference_s: list[float]
    submission_s: list[float]
    reference_ci: tuple[float, float]
    submission_ci: tuple[float, float]
    ratio: float  # submission over reference, the median of the pairs' ratios
    ratio_ci: tuple[float, float] | None  # sign-test interval, with six pairs or more
    pairs: int
    significant: bool
    profiled_ratio: float  # the same ratio from the ProfilerStep windows: a witness


@dataclass
class Reprofile:
    """A re-profiling's facts; the kind decides the verdict from ``outcome``."""

    signal: str
    reference: SideMeasure
    submission: SideMeasure
    outputs_match: bool = False
    mismatch: str = ""
    signal_ratio: float = math.nan  # submission / reference, per step; NaN when unmeasured
    significant: bool = False
    integrity: list[str] = field(default_factory=list)  # findings against the submission
    task_problem: str = ""  # the reference (the task's own program) failed
    timing: StepTiming | None = None
    seed: int = 0

    @property
    def outcome(self) -> str:
        """The first that holds: ``task_problem``, ``integrity_violation``, the
        submission's ``error_kind``, ``wrong_answer``, ``improved`` (the signal
        dropped, significantly), ``not_improved``."""
        if self.task_problem:
            return "task_problem"
        if self.integrity:
            return "integrity_violation"
        if self.submission.error_kind:
            return self.submission.error_kind
        if not self.outputs_match:
            return "wrong_answer"
        if self.significant and self.signal_ratio < 1.0:
            return "improved"
        return "not_improved"

    def as_dict(self) -> dict[str, Any]:
        """Plain data, without the traces (store those as artifacts)."""
        data = dataclasses.asdict(self)
        for side in ("reference", "submission"):
            data[side].pop("trace")
        return {**data, "outcome": self.outcome}


# -- traces -------------------------------------------------------------------------------


class TraceError(Exception):
    """A trace that cannot be counted: not JSON, not a Chrome trace, malformed events."""


class TraceTooLarge(TraceError):
    """A trace past the bounds this module parses."""


@dataclass(frozen=True)
class _Event:
    name: str
    cat: str
    thread: tuple[Any, Any]  # (pid, tid)
    start: float  # microseconds
    end: float


@dataclass
class TraceFacts:
    """What one trace shows: the signals per step, and findings that make it untrustworthy."""

    syncs: list[int] = field(default_factory=list)  # per profiled step window
    launches: list[int] = field(default_factory=list)
    # In the program's window (its import, the warm-up calls, the steps and what lies
    # between them), outside the step windows.
    syncs_outside: int = 0
    launches_outside: int = 0
    step_s: list[float] = field(default_factory=list)
    top: list[OperatorStat] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    # The sparse operators seen in the program's window (``is_sparse_operator``).
    sparse: list[str] = field(default_factory=list)
    # The threads (tids) that ran the program's operators in its window.
    operator_threads: set[Any] = field(default_factory=set)
    # Reads by torch's C read methods, as the trace shows them (``C_READ_MARK``), per
    # step and outside the steps.
    c_reads: list[int] = field(default_factory=list)
    c_reads_outside: int = 0


def _thread_id(value: Any) -> Any:
    if (type(value) is int and -(2**63) <= value < 2**64) or (
        type(value) is str and len(value) <= 200
    ):
        return value
    raise TraceError("an event's pid or tid is not an integer or a short string")


# Kineto writes an annotation's name into the trace as it is, quotes and all: a name
# can close its string and open a container that swallows the events after it, or give
# its own event a second "cat". The trace must therefore have the layout Kineto writes:
# events whose fields are plain values but for a flat ``args``, no event-like object
# anywhere else, and each of these keys exactly as often in the text as in the parse.
UNESCAPED_HINT = (
    " (a record_function or thread name holding a double quote, which the profiler "
    "writes into its trace unescaped, breaks the trace: rename it)"
)
_KEYS = (b"ph", b"cat", b"name", b"ts", b"dur", b"pid", b"tid", b"args")
_COUNTED_KEYS = re.compile(rb'"(' + b"|".join(_KEYS) + rb')"\s*:')
_KEY_NAMES = frozenset(key.decode() for key in _KEYS)
_PLAIN = (str, int, float, bool, type(None))


def _plain_list(value: Any) -> bool:
    """A list of plain values, or of such lists (``Input Dims``), as Kineto writes args."""
    return all(
        type(item) in _PLAIN or (type(item) is list and all(type(i) in _PLAIN for i in item))
        for item in value
    )


def _check_layout(data: bytes, document: dict[str, Any], raw_events: list[Any]) -> None:
    """TraceError unless the trace is laid out as Kineto writes one (see
    ``UNESCAPED_HINT``'s comment)."""
    counted = Counter(m.group(1).decode() for m in _COUNTED_KEYS.finditer(data))
    parsed: Counter[str] = Counter()
    for key, value in document.items():
        if key == "traceEvents":
            continue
        stack = [value]
        while stack:  # the header: device properties and the like, no events
            item = stack.pop()
            if type(item) is dict:
                if "ph" in item or "cat" in item:
                    raise TraceError(f"the trace's {clean_text(key, 40)!r} holds events")
                parsed.update(k for k in item if k in _KEY_NAMES)
                stack += item.values()
            elif type(item) is list:
                stack += item
    for raw in raw_events:
        if type(raw) is not dict:
            raise TraceError("an event is not an object")
        parsed.update(k for k in raw if k in _KEY_NAMES)
        for key, value in raw.items():
            if type(value) in _PLAIN:
                continue
            if key != "args" or type(value) is not dict:
                raise TraceError(
                    f"an event's {clean_text(key, 40)!r} holds a {type(value).__name__}"
                    + UNESCAPED_HINT
                )
            parsed.update(k for k in value if k in _KEY_NAMES)
            if not all(
                type(v) in _PLAIN or (type(v) is list and _plain_list(v)) for v in value.values()
            ):
                raise TraceError("an event's args hold objects" + UNESCAPED_HINT)
    for key in sorted(_KEY_NAMES):
        if counted[key] != parsed[key]:
            raise TraceError(
                f"the key {key!r} is in the trace's text {counted[key]} times but in "
                f"its objects {parsed[key]} times" + UNESCAPED_HINT
            )


def parse_trace(data: bytes) -> list[_Event]:
    """The complete events of the categories counted here, from a Chrome trace's bytes."""
    if len(data) > MAX_TRACE_BYTES:
        raise TraceTooLarge(f"the trace is {len(data)} bytes, over the {MAX_TRACE_BYTES} read")
    # Each event is one object holding one small args object: many more JSON
    # containers than that would make the parser build millions of empty ones.
    containers = data.count(b"{") + data.count(b"[")
    if containers > MAX_CONTAINERS_PER_EVENT * MAX_TRACE_EVENTS:
        raise TraceTooLarge(f"the trace holds {containers} JSON objects and arrays, too many")
    # Nor millions of bare values (a list of floats): an event has a score of fields.
    values = data.count(b",")
    if values > MAX_VALUES_PER_EVENT * MAX_TRACE_EVENTS:
        raise TraceTooLarge(f"the trace holds some {values} JSON values, too many")
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"not JSON ({clean_text(str(exc), 200)}){UNESCAPED_HINT}") from None
    raw_events = document.get("traceEvents") if type(document) is dict else None
    if type(raw_events) is not list:
        raise TraceError("no traceEvents list")
    if len(raw_events) > MAX_TRACE_EVENTS:
        raise TraceTooLarge(f"{len(raw_events)} events, over the {MAX_TRACE_EVENTS} counted")
    _check_layout(data, document, raw_events)
    events = []
    for raw in raw_events:
        category = raw.get("cat")
        if raw.get("ph") != "X" or type(category) is not str or category not in KEPT_CATEGORIES:
            continue
        name, ts, dur = raw.get("name"), raw.get("ts"), raw.get("dur")
        if type(name) is not str or len(name) > MAX_NAME_CHARS:
            raise TraceError("an event's name is not a string")
        if not (is_number(ts) and is_number(dur)) or dur < 0:
            raise TraceError(f"event {clean_text(name, 80)!r} has no valid ts and dur")
        thread = (_thread_id(raw.get("pid")), _thread_id(raw.get("tid")))
        events.append(_Event(name, category, thread, float(ts), float(ts) + float(dur)))
    return events


@dataclass
class _Nesting:
    """How a trace's events nest: each event's innermost enclosing event on its own
    thread (by time), and what lies around and inside it. Computed in one pass each
    way over an order where every event comes after its parent, so that a trace
    nested a million deep costs no more than a flat one."""

    parent: list[int | None]
    step: list[int | None]  # the innermost ProfilerStep window around the event
    runner: list[int | None]  # the runner's window (canary, copy) around the event
    holds_an_operator: list[bool]  # an aten:: operator is nested inside it
    holds_a_read: list[bool]  # a sync candidate is nested inside it

    @classmethod
    def of(cls, events: Sequence[_Event], windows: set[int], runner: set[int]) -> _Nesting:
        count = len(events)
        parent: list[int | None] = [None] * count
        by_thread: dict[tuple[Any, Any], list[int]] = defaultdict(list)
        for index, event in enumerate(events):
            by_thread[event.thread].append(index)
        order: list[int] = []
        for indices in by_thread.values():
            indices.sort(key=lambda i: (events[i].start, -events[i].end, i))
            stack: list[int] = []
            for index in indices:
                while stack and events[stack[-1]].end + NESTING_SLACK_US < events[index].end:
                    stack.pop()
                if stack:
                    parent[index] = stack[-1]
                stack.append(index)
            order += indices
        nesting = cls(parent, [None] * count, [None] * count, [False] * count, [False] * count)
        for index in order:
            above = parent[index]
            if above is not None:
                nesting.step[index] = above if above in windows else nesting.step[above]
                nesting.runner[index] = above if above in runner else nesting.runner[above]
        for index in reversed(order):
            above = parent[index]
            if above is None:
                continue
            if nesting.holds_a_read[index] or _is_sync_candidate(events[index]):
                nesting.holds_a_read[above] = True
            if nesting.holds_an_operator[index] or _is_operator(events[index]):
                nesting.holds_an_operator[above] = True
        return nesting


def _step_windows(events: Sequence[_Event], steps: int) -> tuple[list[int], list[str]]:
    """The index of each ``ProfilerStep#k`` window, k = 0 .. steps-1, and what is wrong
    with them (a window missing, repeated or beyond the steps the runner ran)."""
    found: dict[int, list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        match = STEP_PATTERN.fullmatch(event.name) if event.cat == "user_annotation" else None
        if match:
            found[int(match.group(1))].append(index)
    findings = []
    missing = [k for k in range(steps) if k not in found]
    if missing:
        findings.append(
            f"the trace lacks the step window of step(s) {_ks(missing)}: "
            "the profiler was not recording all the time"
        )
    repeated = [k for k, indices in sorted(found.items()) if len(indices) > 1]
    extra = [k for k in sorted(found) if k >= steps]
    if repeated or extra:
        findings.append(
            f"the trace has {sum(map(len, found.values()))} ProfilerStep windows, "
            f"expected exactly one for each of the {steps} steps"
        )
    windows = [found[k][0] for k in range(steps) if k in found]
    return windows, findings


def _ks(ks: Sequence[int]) -> str:
    shown = ", ".join(str(k) for k in ks[:10])
    return shown + (f" and {len(ks) - 10} more" if len(ks) > 10 else "")


def _canary_windows(
    events: Sequence[_Event], nonce: str, prefix: str = "bw_canary#"
) -> dict[int, list[int]]:
    """The runner's canary windows (or, with ``prefix="bw_keep#"``, its windows copying
    a step's outputs) with this grading's nonce, by step."""
    found: dict[int, list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        if event.cat != "user_annotation" or not event.name.startswith(prefix):
            continue
        head, _, tail = event.name.partition("/")
        number = head.removeprefix(prefix)
        if tail == nonce and number.isascii() and number.isdigit() and len(number) <= 9:
            found[int(number)].append(index)
    return found


def _missing_canaries(
    events: Sequence[_Event],
    nesting: _Nesting,
    windows: Sequence[int],
    canaries: Mapping[int, list[int]],
) -> list[str]:
    """A finding unless each step's window holds exactly one canary window, which
    holds exactly one canary op."""
    adds: dict[int, int] = defaultdict(int)
    for index, event in enumerate(events):
        above = nesting.parent[index]
        if event.cat == "cpu_op" and event.name == CANARY_OP and above is not None:
            adds[above] += 1
    bad = [
        k
        for k, window in enumerate(windows)
        if len(canaries.get(k, [])) != 1
        or nesting.step[canaries[k][0]] != window
        or adds.get(canaries[k][0]) != 1
    ]
    if not bad:
        return []
    return [
        f"the runner's canary op is missing from step(s) {_ks(bad)} of the trace: "
        "the profiler stopped recording"
    ]


def _extra_runner_windows(
    nesting: _Nesting, windows: Sequence[int], by_kind: Mapping[str, Mapping[int, list[int]]]
) -> list[str]:
    """A finding unless the runner's windows named with the nonce are exactly one copy
    window and one canary window per step, each directly inside its step's window: what
    lies in them is left out of the counts, so a program that learnt the nonce could
    open more of them around its own work."""
    wrong = sorted(
        {
            f"{kind}#{k}"
            for kind, found in by_kind.items()
            for k, indices in found.items()
            if k >= len(windows) or len(indices) != 1 or nesting.parent[indices[0]] != windows[k]
        }
    )
    if not wrong:
        return []
    return [
        f"the trace holds windows named as the runner's that the runner did not open as "
        f"such ({', '.join(wrong[:5])}): work inside them would go uncounted"
    ]


def _program_window(events: Sequence[_Event], nonce: str) -> tuple[_Event | None, list[str]]:
    """The runner's ``bw_program/<nonce>`` window, from the program's import to the end
    of its last step, or the finding that it is not there exactly once."""
    name = PROGRAM_NAME.format(nonce=nonce)
    found = [e for e in events if e.cat == "user_annotation" and e.name == name]
    if len(found) == 1:
        return found[0], []
    return None, [
        f"the trace has {len(found)} windows of the program's run, expected one: "
        "the profiler was not recording all the time"
    ]


def _work_in_runner_windows(
    events: Sequence[_Event], nesting: _Nesting, canaries: set[int]
) -> list[str]:
    """A finding when one of the runner's windows holds an operator the runner does not
    run there: in a canary window anything but the canary's own op with nothing nested
    in it; in a window copying a step's outputs, anything but the views and copies that
    takes. Work run inside the runner's ops (by a dispatch mode, a kernel registered over
    ``aten::add``) would otherwise go uncounted."""
    foreign = []
    for index, event in enumerate(events):
        window = nesting.runner[index]
        if window is None or event.cat != "cpu_op":
            continue
        if window in canaries:
            expected = event.name == CANARY_OP and not nesting.holds_an_operator[index]
        else:
            expected = event.name in COPY_OPERATORS
        if not expected:
            foreign.append(index)
    if not foreign:
        return []
    names = sorted({events[index].name for index in foreign})[:5]
    return [
        f"work ran inside the runner's own operators ({len(foreign)} operator event(s): "
        f"{', '.join(clean_text(n, 80) for n in names)})"
    ]


def _work_outside(events: Sequence[_Event], program: _Event) -> list[str]:
    """A finding when an operator ran while the profiler was on but outside the program's
    window: the runner runs none there, so it is the program's work, done where no
    count reaches (inside the profiler's own stop, say)."""
    outside = [
        e
        for e in events
        if e.cat == "cpu_op" and not program.start <= e.start <= program.end + NESTING_SLACK_US
    ]
    if not outside:
        return []
    names = sorted({e.name for e in outside})[:5]
    return [
        f"{len(outside)} operator event(s) ran outside the program's window "
        f"({', '.join(clean_text(n, 80) for n in names)}): work the count cannot reach"
    ]


def analyse_trace(data: bytes, steps: int, nonce: str) -> TraceFacts:
    """Count a trace's signals per step and in the whole program window (see the module's
    docstring); TraceError when it cannot be parsed, findings when it cannot be trusted."""
    events = parse_trace(data)
    windows, findings = _step_windows(events, steps)
    program, program_findings = _program_window(events, nonce)
    if findings or program is None:
        return TraceFacts(findings=findings + program_findings)
    canaries = _canary_windows(events, nonce)
    canary_set = {index for indices in canaries.values() for index in indices}
    keep_windows = _canary_windows(events, nonce, "bw_keep#")
    keeps = {i for ids in keep_windows.values() for i in ids}
    nesting = _Nesting.of(events, set(windows), canary_set | keeps)
    facts = TraceFacts(
        syncs=[0] * steps,
        launches=[0] * steps,
        c_reads=[0] * steps,
        step_s=[(events[w].end - events[w].start) / 1e6 for w in windows],
        findings=_missing_canaries(events, nesting, windows, canaries)
        + _extra_runner_windows(nesting, windows, {"bw_canary": canaries, "bw_keep": keep_windows})
        + _work_in_runner_windows(events, nesting, canary_set)
        + _work_outside(events, program),
    )
    starts = [events[w].start for w in windows]
    children_us: dict[int, float] = defaultdict(float)
    for index, above in enumerate(nesting.parent):
        if above is not None:
            children_us[above] += events[index].end - events[index].start
    operators: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for index, event in enumerate(events):
        if (
            event.cat == "user_annotation"
            or not program.start <= event.start <= program.end
            or nesting.runner[index] is not None
        ):
            continue
        k = bisect_right(starts, event.start) - 1
        in_step = k >= 0 and event.start <= events[windows[k]].end
        sync = _is_sync_candidate(event) and not nesting.holds_a_read[index]
        launch = _is_operator(event) and not nesting.holds_an_operator[index]
        c_read = _is_c_read(events, nesting, index)
        if in_step:
            facts.syncs[k] += sync
            facts.launches[k] += launch
            facts.c_reads[k] += c_read
        else:
            facts.syncs_outside += sync
            facts.launches_outside += launch
            facts.c_reads_outside += c_read
        if event.cat == "cpu_op":
            facts.operator_threads.add(event.thread[1])
        sparse = event.cat == "cpu_op" and is_sparse_operator(event.name)
        if sparse and event.name not in facts.sparse:
            facts.sparse.append(event.name)
        if in_step and event.cat == "cpu_op":
            stat = operators[event.name]
            stat[0] += 1
            stat[1] += max(0.0, event.end - event.start - children_us[index])
    ranked = sorted(operators.items(), key=lambda item: -item[1][1])[:TOP_OPERATORS]
    facts.top = [OperatorStat(name, int(count), round(us, 3)) for name, (count, us) in ranked]
    return facts


# What a read by torch's C ``tolist`` or ``numpy`` leaves in a CPU trace, however it was
# called (through the watched wrapper, or the C method called from C, where no hook sees
# the call: ``map`` over the original the watch keeps, which its module holds where the
# program can reach it): a ``resolve_conj`` then this, enclosed by no operator. The
# grader counts each one the hook did not (``_unseen_c_reads``).
C_READ_MARK = "aten::resolve_neg"
# The hook's labels for the reads that leave the mark, one each.
C_READ_LABELS = frozenset({"Tensor.tolist", "Tensor.numpy", "Tensor.__array__"})


def _is_c_read(events: Sequence[_Event], nesting: _Nesting, index: int) -> bool:
    event = events[index]
    if event.cat != "cpu_op" or event.name != C_READ_MARK:
        return False
    above = nesting.parent[index]
    return above is None or events[above].cat != "cpu_op"


def _is_sync_candidate(event: _Event) -> bool:
    if event.cat == "cpu_op":
        return event.name in SCALAR_READS
    return event.cat == "cuda_runtime" and event.name in SYNC_RUNTIME_CALLS


def _is_operator(event: _Event) -> bool:
    return event.cat == "cpu_op" and event.name.startswith("aten::")


# -- outputs ------------------------------------------------------------------------------


class _OutputTree(TreeWalker):
    """A runner's packed outputs: tensors rebuilt from their bytes, opaque leaves kept as
    None (``compare_outputs`` refuses them by their nodes)."""

    leaf_kinds = ("tensor", "opaque")

    def __init__(self, blobs: Sequence[memoryview]) -> None:
        super().__init__()
        self.blobs = blobs

    def leaf(self, node: dict[str, Any]) -> Any:
        if node["k"] == "opaque":
            return None
        dtype, shape = check_tensor_node(node)
        if node.get("device") not in ("cpu", "cuda"):
            raise ProtocolError("a tensor without a known device")
        blob = node.get("blob")
        if not is_count(blob) or blob >= len(self.blobs):
            raise ProtocolError("bad blob index")
        data = self.blobs[blob]
        if data.nbytes != tensor_nbytes(node["dtype"], shape):
            raise ProtocolError("a tensor's bytes do not match its shape and dtype")
        return copy_tensor(dtype, shape, data)


# A call's outputs: where they came from ("profiled step 2"), their node and value.
Piece = tuple[str, Any, Any]


def _pieces(node: Any, value: Any, spec: ProgramSpec) -> list[Piece]:
    """Every call's outputs out of the runner's tree; ProtocolError if it is not the
    tree the runner builds for this spec."""
    if type(value) is not dict or set(value) != {"profiled", "timed"}:
        raise ProtocolError("the outputs are not the runner's tree")
    # The value was unpacked from the node: its keys are the string keys above.
    nodes = {key_node["v"]: item_node for key_node, item_node in node["items"]}
    profiled, timed = _items(nodes["profiled"]), _items(nodes["timed"])
    batches = spec.repeats if spec.signal == "step_time" else 0
    if len(profiled) != spec.steps or len(timed) != batches:
        raise ProtocolError("the outputs do not hold one entry per call")
    pieces = [
        (f"profiled step {k}", item_node, item)
        for k, (item_node, item) in enumerate(zip(profiled, value["profiled"], strict=True))
    ]
    for b, (batch_node, batch) in enumerate(zip(timed, value["timed"], strict=True)):
        steps = _items(batch_node)
        if len(steps) != spec.steps:
            raise ProtocolError("a timed batch's outputs do not hold one entry per step")
        for k, (item_node, item) in enumerate(zip(steps, batch, strict=True)):
            pieces.append((f"timed batch {b} step {k}", item_node, item))
    return pieces


def _items(node: Any) -> list[Any]:
    if type(node) is not dict or node.get("k") != "list" or type(node.get("items")) is not list:
        raise ProtocolError("the outputs are not the runner's tree")
    return list(node["items"])


# -- one side's sandboxed runner ----------------------------------------------------------


def _env() -> dict[str, str]:
    # MALLOC_ENV is the kernel kind's: freed memory kept, so timings repeat. TorchScript
    # off: scripted and traced functions run as Python, where the watch sees their reads
    # (prim::tolist in the JIT's interpreter is seen by nothing); the runner reports any
    # TorchScript that runs all the same.
    return {**python_env(WORKDIR), **MALLOC_ENV, "PYTORCH_JIT": "0"}


def _request(
    spec: ProgramSpec, program: Mapping[str, str], inputs_text: str, limits: Limits
) -> RunRequest:
    """A runner sandbox holding one program and the task's inputs module, nothing else."""
    files = {
        f"program/{path}": text.encode("utf-8", "surrogatepass") for path, text in program.items()
    }
    files[f"task/{spec.inputs_module}"] = inputs_text.encode("utf-8", "surrogatepass")
    return RunRequest(
        argv=[sys.executable, "-I", "-B", "-c", BOOTSTRAP],
        limits=limits,
        files=files,
        env=_env(),
        ro_binds=[
            (str(RUNNER_DIR), f"{MOUNT}/profile_runner"),
            (str(HARNESS_DIR), f"{MOUNT}/harness"),
        ],
        workdir=WORKDIR,
        gpus=(0,) if spec.cuda else (),
    )


class _Program:
    """One side's runner process, and what it has shown so far."""

    def __init__(self, role: str, backend: Sandbox, request: RunRequest) -> None:
        self.role = role
        self.backend = backend
        self.measure = SideMeasure(role)
        self.side: Side | None = None
        self.result: RunResult | None = None
        self.outputs: tuple[Any, Any] | None = None  # (node, value)
        # Each command's outputs as its reply carried them: (node, blobs).
        self.parts: dict[str, Any] = {"profiled": None, "timed": []}
        self.host_reads: HostReads | None = None  # what the runner's hook saw
        self.outputs_bytes = 0
        self.run_outputs_bytes = 0  # the outputs in the run's reply
        try:
            self.side = Side.start(role, backend, request)
        except ValueError as exc:  # a file name that cannot be placed in the work dir
            self.measure.fail("refused", f"its files cannot be placed in a sandbox: {exc}")
        except OSError as exc:
            if exc.errno not in FILES_TOO_LARGE:
                raise
            self.measure.fail("refused", f"its files do not fit in a sandbox ({exc.strerror})")

    @property
    def alive(self) -> bool:
        return self.side is not None and not self.measure.error_kind

    def hello(self) -> None:
        """Wait for the runner's hello; only the runner's own code has run by then, so a
        runner that does not start is the sandbox's failure."""
        if self.side is None:
            return
        try:
            self.side.await_reply("hello", STARTUP_TIMEOUT_S)
        except SideFailure as failure:
            self.side.kill()
            raise SandboxError(
                f"the {self.role} profile runner did not start ({failure.message})"
            ) from None

    def ask(
        self, op: str, header: dict[str, Any], timeout_s: float, max_bytes: int = SMALL_REPLY
    ) -> Reply | None:
        """One command's reply, or None when the side failed (which is recorded)."""
        if not self.alive:
            return None
        assert self.side is not None
        try:
            reply = self.side.request(op, header, timeout_s=timeout_s, max_bytes=max_bytes)
        except SideFailure as failure:
            kind = {"timeout": "timeout", "gone": "crashed"}.get(failure.kind, "garbled")
            if kind != "crashed":  # one that ended on its own is left to say how
                self.side.kill()
            self.measure.fail(kind, failure.message)
            return None
        violations = reply.header.get("violations", [])
        if type(violations) is not list:
            violations = ["its runner's reply lists its findings malformed"]
        self.measure.integrity += [clean_text(item, 400) for item in violations[:20]]
        raised = reply.header.get("raised")
        if raised is not None:
            error = clean_error(raised)
            self.measure.fail("raised", f"{error['type']} in {error['where']}: {error['message']}")
            self.measure.traceback = error["traceback"]
            return None
        return reply

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """This side frozen, so that nothing in it runs while the other side is measured."""
        if not self.alive:
            yield
            return
        frozen = self._freeze()
        try:
            yield
        finally:
            if frozen and self.side is not None:
                self.side.thaw()

    def cpu_s(self) -> float | None:
        """The sandbox's CPU time, read while it is frozen (exact then)."""
        if not self._freeze():
            return None
        assert self.side is not None
        try:
            return self.side.cpu_s()
        finally:
            self.side.thaw()

    def _freeze(self) -> bool:
        assert self.side is not None
        try:
            self.side.freeze()
        except FreezeTimeout as exc:
            if self.role == "reference":
                raise
            self.measure.integrity.append(f"its processes could not be paused ({exc})")
            self.measure.fail("crashed", "its processes could not be paused")
            self.side.kill()
            return False
        return True

    def finish(self) -> None:
        """End the process (whatever state it is in) and read what the sandbox saw."""
        if self.side is None or self.result is not None:
            return
        self.result = result = self.side.finish()
        self.measure.peak_memory_bytes = result.memory_peak_bytes
        self.measure.output = _output_text(result)
        _explain_failure(self.measure, result)

    def keep_outputs(self, reply: Reply, part: str) -> None:
        """A reply's outputs, kept for ``assemble`` (a batch's go on the timed list)."""
        node = reply.header.get("value")
        if part == "timed":
            self.parts["timed"].append((node, reply.blobs))
        else:
            self.parts[part] = (node, reply.blobs)

    def assemble(self, cap: int | None = None) -> None:
        """Every call's outputs as one tree (the runner's replies put together, blob
        indices renumbered), unpacked; ``cap`` bounds their bytes (the submission's, at
        twice the reference's and some room)."""
        if not self.alive:
            return
        blobs: list[memoryview] = []

        def renumbered(part: Any) -> Any:
            node, part_blobs = part
            offset = len(blobs)
            blobs.extend(part_blobs)
            return _shift_blobs(node, offset)

        try:
            profiled = self.parts["profiled"]
            if profiled is None:
                raise ProtocolError("a reply did not carry its outputs")
            node = {
                "k": "dict",
                "items": [
                    [{"k": "str", "v": "profiled"}, renumbered(profiled)],
                    [
                        {"k": "str", "v": "timed"},
                        {"k": "list", "items": [renumbered(p) for p in self.parts["timed"]]},
                    ],
                ],
            }
            size = sum(blob.nbytes for blob in blobs)
            if cap is not None and size > cap:
                raise ProtocolError(f"its outputs take {size} bytes, over the {cap} allowed")
            self.outputs = (node, _OutputTree(blobs).unpack(node))
        except (ProtocolError, RuntimeError, ValueError, MemoryError, RecursionError) as exc:
            self.measure.fail("garbled", f"its outputs are malformed: {exc}")
            return
        self.outputs_bytes = size
        self.measure.outputs_ok = True


def _shift_blobs(node: Any, offset: int, depth: int = 0) -> Any:
    """A packed tree with its blob indices moved by ``offset``; ProtocolError when it is
    not a tree (too deep, not made of nodes)."""
    if depth > MAX_TREE_DEPTH + 4 or type(node) is not dict:
        raise ProtocolError("the outputs are not a value tree")
    if node.get("k") == "tensor":
        blob = node.get("blob")
        if not is_count(blob):
            raise ProtocolError("bad blob index")
        return {**node, "blob": blob + offset}
    items = node.get("items")
    if type(items) is not list:
        return node
    shifted = []
    for item in items:
        if type(item) is list:
            shifted.append([_shift_blobs(x, offset, depth + 1) for x in item])
        else:
            shifted.append(_shift_blobs(item, offset, depth + 1))
    return {**node, "items": shifted}


def _explain_failure(measure: SideMeasure, result: RunResult) -> None:
    """Name what ended a side's process, from what the sandbox saw of it."""
    kind = measure.error_kind
    limit = LIMIT_KINDS.get(result.limit_exceeded or "")
    if result.memory_limit_hit and kind in ("crashed", "garbled", "raised"):
        measure.error_kind = "memory"
        measure.error = "the process ran out of its memory limit"
    elif limit is not None and kind in ("crashed", "garbled", "timeout"):
        measure.error_kind = limit
        measure.error = f"the sandbox's {result.limit_exceeded} limit ended the process"
    elif kind == "crashed" and result.exit_code == 0 and result.signal is None:
        measure.error_kind = "exited"
        measure.error = "the process exited with status 0 in the middle of a command"
    elif kind == "crashed":
        how = f"signal {result.signal}" if result.signal is not None else ""
        how = how or f"status {result.exit_code}"
        measure.error = f"the process ended ({how}) before it answered"
    elif kind == "timeout":
        measure.error = "a command did not finish within its time limit"


# -- the grading --------------------------------------------------------------------------


def _output_text(result: RunResult) -> str:
    """The end of what the process printed, without Kineto's own start and stop lines."""
    text = (result.stdout + b"\n" + result.stderr).decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if not line.startswith("USDT:")]
    return clean_text("\n".join(lines[-200:]).strip(), OUTPUT_CHARS)


def _seed_plan(spec: ProgramSpec, seed: int) -> dict[str, Any]:
    """One seed per call, derived from the grading's secret seed; the last profiled
    step uses the secret seed itself. Both sides get the same plan."""
    rng = random.Random(seed)

    def draw(count: int) -> list[int]:
        return [rng.randrange(2**31) for _ in range(count)]

    batches = spec.repeats if spec.signal == "step_time" else 0
    return {
        "warmup": draw(spec.warmup),
        "profiled": [*draw(spec.steps - 1), seed],
        "timed": [draw(spec.steps) for _ in range(batches)],
    }


def _run(
    program: _Program,
    other: _Program,
    spec: ProgramSpec,
    plan: dict[str, Any],
    nonce: str,
    timeout_s: float,
    reply_cap: int = REPLY_CAP,
) -> None:
    """The profiled run: its reply carries the trace and every call's outputs, in at
    most ``reply_cap`` bytes."""
    header = {
        "seeds": {key: plan[key] for key in ("warmup", "profiled")},
        "nonce": nonce,
        "module": spec.module,
        "entry": spec.entry,
        "inputs_module": spec.inputs_module,
        "cuda": spec.cuda,
        "own_pid_namespace": program.backend.own_pid_namespace,
    }
    with other.paused():
        reply = program.ask("run", header, timeout_s, max_bytes=reply_cap)
    if reply is None:
        return
    trace_blob = reply.header.get("trace_blob")
    if not is_count(trace_blob) or trace_blob != len(reply.blobs) - 1:
        program.measure.fail("garbled", "its runner's reply does not carry the trace")
        return
    program.measure.trace = bytes(reply.blobs[trace_blob])
    reply.blobs = reply.blobs[:trace_blob]
    program.keep_outputs(reply, "profiled")
    program.run_outputs_bytes = sum(blob.nbytes for blob in reply.blobs)
    if is_count(reply.header.get("cuda_peak_bytes")):
        program.measure.cuda_peak_bytes = reply.header["cuda_peak_bytes"]
    reads = _host_reads(reply.header.get("host_reads"), spec)
    if reads is None:
        program.measure.fail("garbled", "its runner's report of host reads is malformed")
        return
    program.host_reads = reads


@dataclass
class HostReads:
    """What the runner's hook saw: reads by label at import, per warm-up call and per
    profiled step, and the steps during which a Python thread it does not watch ran."""

    at_import: dict[str, int]
    between: dict[str, int]  # after a step's call, before the next step's
    warmup: list[dict[str, int]]
    steps: list[dict[str, int]]
    unwatched_steps: list[int]
    threads: set[int]  # the watched threads' kernel ids (the trace's tids)


def _read_counts(value: Any) -> dict[str, int] | None:
    if type(value) is not dict or len(value) > MAX_READ_LABELS:
        return None
    if not all(
        type(k) is str and len(k) <= 100 and is_count(v) and v <= MAX_READS
        for k, v in value.items()
    ):
        return None
    return {clean_text(k, 100): int(v) for k, v in value.items()}


def _count_list(value: Any, length: int) -> list[dict[str, int]] | None:
    if type(value) is not list or len(value) != length:
        return None
    counts = [_read_counts(item) for item in value]
    return None if any(item is None for item in counts) else [c for c in counts if c is not None]


def _host_reads(value: Any, spec: ProgramSpec) -> HostReads | None:
    """The runner's ``host_reads``, or None when it is not what the runner sends."""
    if type(value) is not dict:
        return None
    at_import = _read_counts(value.get("import"))
    between = _read_counts(value.get("between"))
    warmup = _count_list(value.get("warmup"), spec.warmup)
    steps = _count_list(value.get("steps"), spec.steps)
    unwatched = value.get("unwatched_steps")
    threads = value.get("threads")
    if at_import is None or between is None or warmup is None or steps is None:
        return None
    if type(unwatched) is not list or type(threads) is not list:
        return None
    if len(unwatched) > spec.steps or not all(is_count(k) and k < spec.steps for k in unwatched):
        return None
    if len(threads) > MAX_WATCHED_THREADS or not all(is_count(t) and t < 2**32 for t in threads):
        return None
    return HostReads(
        at_import, between, warmup, steps, [int(k) for k in unwatched], {int(t) for t in threads}
    )


def _timed_batch(
    program: _Program,
    other: _Program,
    spec: ProgramSpec,
    plan: dict[str, Any],
    batch: int,
    timeout_s: float,
) -> bool:
    """One timed batch, measured from outside while the other side is frozen."""
    with other.paused():
        before = program.cpu_s()
        began = time.perf_counter()
        header = {"batch": batch, "seeds": plan["timed"][batch]}
        reply = program.ask("time", header, timeout_s, max_bytes=REPLY_CAP)
        wall_s = time.perf_counter() - began
        after = program.cpu_s()
    if reply is None or before is None or after is None:
        return False
    inside = reply.header.get("inside_s")
    if not (
        type(inside) is list
        and len(inside) == spec.steps
        and all(is_number(x) and x >= 0 for x in inside)
    ):
        program.measure.fail("garbled", "its timed batch reply is malformed")
        return False
    program.measure.inside_step_s += [float(x) for x in inside]
    program.measure.timed_step_s.append((wall_s if spec.cuda else after - before) / spec.steps)
    program.keep_outputs(reply, "timed")
    return True


def _time(
    reference: _Program,
    submission: _Program,
    spec: ProgramSpec,
    plan: dict[str, Any],
    timeout_s: float,
) -> None:
    """``repeats`` pairs of batches; each pair's first side alternates, so that a drift of
    the host's speed falls on both sides alike."""
    for batch in range(spec.repeats):
        pair = (reference, submission) if batch % 2 == 0 else (submission, reference)
        for program in pair:
            other = submission if program is reference else reference
            if not _timed_batch(program, other, spec, plan, batch, timeout_s):
                return


def _step_timing(spec: ProgramSpec, ref: SideMeasure, sub: SideMeasure) -> StepTiming:
    ratios = stats.paired_log_ratios(ref.timed_step_s, sub.timed_step_s)  # ln(ref / sub)
    middle = stats.median(ratios) if ratios else 0.0
    ratio = math.exp(-middle)
    ref_ci = stats.bootstrap_median_ci(ref.timed_step_s, seed=1)
    sub_ci = stats.bootstrap_median_ci(sub.timed_step_s, seed=2)
    interval = stats.sign_test_interval(ratios)
    margin = math.log1p(MIN_EFFECT)
    if interval is not None:
        significant = interval[0] > margin
        ratio_ci: tuple[float, float] | None = (math.exp(-interval[1]), math.exp(-interval[0]))
    else:
        significant = sub_ci[1] < ref_ci[0] and middle > margin
        ratio_ci = None
    profiled = (
        stats.median(sub.step_times_s) / stats.median(ref.step_times_s)
        if ref.step_times_s and sub.step_times_s and stats.median(ref.step_times_s) > 0
        else math.nan
    )
    method = (
        "the grader's wall clock around each timed batch, over its steps"
        if spec.cuda
        else "CPU time of the whole sandbox (its cgroup) between freezes around each timed "
        "batch, over its steps"
    )
    return StepTiming(
        method=method,
        reference_s=list(ref.timed_step_s),
        submission_s=list(sub.timed_step_s),
        reference_ci=ref_ci,
        submission_ci=sub_ci,
        ratio=ratio,
        ratio_ci=ratio_ci,
        pairs=len(ratios),
        significant=significant,
        profiled_ratio=profiled,
    )


def _count_trace(program: _Program, spec: ProgramSpec, nonce: str) -> None:
    """The side's signals from its trace, or the findings that make the trace unusable.
    Only a run that went through to the end is counted."""
    measure = program.measure
    if measure.error_kind or program.result is None:
        return
    data = measure.trace
    if data is None:
        measure.integrity.append("the run wrote no profiler trace")
        return
    try:
        facts = analyse_trace(data, spec.steps, nonce)
    except TraceTooLarge as exc:
        measure.fail("output_limit", f"its trace is too large to count: {exc}")
        return
    except TraceError as exc:
        measure.integrity.append(f"its profiler trace does not parse: {exc}")
        return
    measure.integrity += facts.findings
    if facts.findings:
        return
    if program.host_reads is None:
        measure.fail("garbled", "its runner did not report its host reads")
        return
    if spec.signal in ("syncs", "launches") and facts.sparse:
        measure.integrity.append(
            "it makes or uses sparse tensors ("
            + ", ".join(facts.sparse[:3])
            + "), whose operators read their indices on the host to size what they "
            "return, with no sync recorded on a CPU host"
        )
    _host_read_findings(measure, spec, program.host_reads)
    _unwatched_threads(measure, spec, facts, program.host_reads)
    unseen, unseen_outside = _unseen_c_reads(measure, spec, facts, program.host_reads)
    measure.syncs_per_step = [
        syncs + reads + more
        for syncs, reads, more in zip(facts.syncs, measure.host_reads_per_step, unseen, strict=True)
    ]
    measure.launches_per_step = facts.launches
    measure.step_times_s = facts.step_s
    measure.top_operators = facts.top
    per_step: dict[str, Sequence[float]] = {
        "syncs": measure.syncs_per_step,
        "launches": facts.launches,
        "step_time": facts.step_s,
    }
    measure.signal_per_step = [float(x) for x in per_step[spec.signal]]
    if spec.signal == "step_time":
        return
    reads = program.host_reads
    outside = {
        "syncs": facts.syncs_outside
        + unseen_outside
        + sum(reads.at_import.values())
        + sum(reads.between.values())
        + sum(sum(counts.values()) for counts in reads.warmup),
        "launches": facts.launches_outside,
    }[spec.signal]
    measure.signal_outside_steps = outside
    calls = spec.steps + spec.warmup
    measure.signal_per_call = (sum(measure.signal_per_step) + outside) / calls


def _labels(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{label} x{count}" for label, count in sorted(counts.items()))


def _host_read_findings(measure: SideMeasure, spec: ProgramSpec, reads: HostReads) -> None:
    """Host reads outside the dispatcher: counted as syncs per step, and findings for
    what cannot be counted (see the module's docstring, "Integrity")."""
    measure.host_reads_per_step = [sum(counts.values()) for counts in reads.steps]
    totals: dict[str, int] = defaultdict(int)
    for counts in [*reads.steps, reads.between]:
        for label, count in counts.items():
            totals[label] += count
    measure.host_reads = dict(totals)
    measure.host_reads_at_import = dict(reads.at_import)
    if spec.signal == "step_time":
        return
    if spec.signal == "syncs":
        _view_findings_syncs(measure, reads)
    else:
        _view_findings_launches(measure, reads)
    if reads.unwatched_steps:
        measure.integrity.append(
            "a Python thread the runner does not watch was alive in step(s) "
            f"{_ks(reads.unwatched_steps)}: its host reads cannot be counted"
        )
    reads_of_tensors = {k: v for k, v in totals.items() if k not in WRAPS_HOST_MEMORY}
    if spec.signal == "launches" and reads_of_tensors:
        measure.integrity.append(
            f"it moves work out of torch where the profiler cannot count it: it reads "
            f"tensor memory on the host in the profiled steps ({_labels(reads_of_tensors)})"
        )


def _unseen_c_reads(
    measure: SideMeasure, spec: ProgramSpec, facts: TraceFacts, reads: HostReads
) -> tuple[list[int], int]:
    """The reads by torch's C read methods that the trace shows and the hook did not
    count, per step and outside the steps: syncs for a ``syncs`` task, a finding for a
    ``launches`` task (any host read in a step is one)."""

    def seen(counts: Mapping[str, int]) -> int:
        return sum(count for label, count in counts.items() if label in C_READ_LABELS)

    unseen: list[int] = [
        max(0, marks - seen(counts))
        for marks, counts in zip(facts.c_reads, reads.steps, strict=True)
    ]
    hooked_outside = sum(seen(counts) for counts in [reads.at_import, reads.between, *reads.warmup])
    unseen_outside = max(0, facts.c_reads_outside - hooked_outside)
    total = sum(unseen)
    if spec.signal == "launches" and total:
        measure.integrity.append(
            f"it reads tensor memory on the host in the profiled steps where the runner's "
            f"hook did not see the call ({total} read(s) by torch's C tolist or numpy, "
            "as the trace shows them)"
        )
    return unseen, unseen_outside


def _unwatched_threads(
    measure: SideMeasure, spec: ProgramSpec, facts: TraceFacts, reads: HostReads
) -> None:
    """On a CPU host, operators of the program's window run on its own threads: the
    program's thread and those it started, all watched (``HostReads.threads``). A thread
    torch starts in C++ and runs Python on (the autograd engine's, for a backward
    nested past its depth limit) has no hook, and no frame between its tasks for the
    runner's check of each step to see: host reads there cannot be counted, and its
    operators are the sign. (On a GPU host the autograd engine runs a device's backward
    on a thread of its own, and a read of device memory shows in the trace wherever it
    is made.)"""
    if spec.cuda or spec.signal == "step_time":
        return
    others = sorted(t for t in facts.operator_threads if t not in reads.threads)
    if others:
        shown = ", ".join(clean_text(t, 40) for t in others[:3])
        measure.integrity.append(
            f"operators ran on a thread the runner does not watch (tid {shown}; torch's "
            "autograd engine starts one for a backward nested past its depth limit): "
            "its host reads cannot be counted"
        )


def _view_findings_syncs(measure: SideMeasure, reads: HostReads) -> None:
    """A syncs task takes no view at all: a view counts once, however many reads go
    through it (a value copied into a buffer tensor, read from its NumPy view)."""
    views: dict[str, int] = defaultdict(int)
    for counts in [reads.at_import, *reads.warmup, *reads.steps, reads.between]:
        for label, count in _views(counts).items():
            views[label] += count
    if views:
        measure.integrity.append(
            f"it takes views of tensor or shared memory ({_labels(views)}): reads "
            "through a view cannot be counted (read values with .item() or .tolist(), "
            "which copy)"
        )


def _view_findings_launches(measure: SideMeasure, reads: HostReads) -> None:
    """A launches task may wrap host memory in every call alike (positions made with
    NumPy), but not at import or differently between calls: reads through a view kept
    from an earlier call would not be counted."""
    views = _views(reads.at_import)
    if views:
        measure.integrity.append(
            f"it took a view of tensor memory at import ({_labels(views)}): "
            "reads through it during the steps cannot be counted"
        )
    calls = [_views(counts) for counts in reads.warmup + reads.steps]
    odd = next((index for index, call in enumerate(calls) if call != calls[0]), None)
    if odd is not None:
        measure.integrity.append(
            "it takes different views of tensor memory in different calls (warm-up calls "
            f"then steps: call 0 {_labels(calls[0]) or 'none'}, call {odd} "
            f"{_labels(calls[odd]) or 'none'}): reads through a view kept from an earlier "
            "call cannot be counted"
        )


def _views(counts: Mapping[str, int]) -> dict[str, int]:
    return {label: count for label, count in counts.items() if label not in COPY_READS}


def _compare(result: Reprofile, spec: ProgramSpec, ref: _Program, sub: _Program) -> None:
    """Every call's outputs of the submission against the reference's, in call order."""
    assert ref.outputs is not None and sub.outputs is not None

    def tolerance_for(dtype: str) -> Tolerance:
        atol, rtol = spec.tolerances.get(dtype, (0.0, 0.0))
        return Tolerance(atol, rtol)

    try:
        ref_pieces = _pieces(*ref.outputs, spec)
    except ProtocolError as exc:
        result.task_problem = f"the reference's outputs are not usable: {exc}"
        return
    try:
        sub_pieces = _pieces(*sub.outputs, spec)
    except ProtocolError as exc:
        sub.measure.fail("garbled", f"its outputs are malformed: {exc}")
        return
    for (label, ref_node, ref_value), (_, sub_node, sub_value) in zip(
        ref_pieces, sub_pieces, strict=True
    ):
        try:
            comparison = compare_outputs(ref_node, ref_value, sub_node, sub_value, tolerance_for)
        except ValueError as exc:  # the reference returned something that cannot be compared
            result.task_problem = f"{label}: {exc}"
            return
        if comparison.integrity:
            result.integrity.append(f"{label}: {comparison.integrity}")
        if not comparison.ok:
            result.mismatch = clean_text(f"{label}: {comparison.message}", 2000)
            return
    result.outputs_match = True


def _signal_ratio(result: Reprofile, spec: ProgramSpec) -> None:
    ref, sub = result.reference, result.submission
    if spec.signal == "step_time":
        if len(ref.timed_step_s) == len(sub.timed_step_s) == spec.repeats:
            result.timing = _step_timing(spec, ref, sub)
            result.signal_ratio = result.timing.ratio
            result.significant = result.timing.significant
        return
    if ref.signal_per_call is None or sub.signal_per_call is None:
        return
    ref_mean, sub_mean = ref.signal_per_call, sub.signal_per_call
    if ref_mean == 0:
        result.task_problem = (
            f"the reference program shows no {spec.signal} in its run: "
            "the planted problem is missing"
        )
        result.signal_ratio = 1.0 if sub_mean == 0 else math.inf
        return
    # The worse of the run's ratio and the worst profiled step's: a task's "at most a
    # tenth" holds over the run and in every step.
    ref_step = sum(ref.signal_per_step) / max(len(ref.signal_per_step), 1)
    worst = max(sub.signal_per_step, default=0.0)
    worst_step = worst / ref_step if ref_step else (math.inf if worst else 0.0)
    result.signal_ratio = max(sub_mean / ref_mean, worst_step)
    result.significant = sub_mean < ref_mean and max(sub.signal_per_step) < min(ref.signal_per_step)


def _task_problem(reference: SideMeasure) -> str:
    if reference.error_kind:
        return f"the reference program failed ({reference.error_kind}): {reference.error}"
    if reference.integrity:
        return "the reference program's run is not usable: " + "; ".join(reference.integrity)
    return ""


def reprofile(
    spec: ProgramSpec,
    reference_files: Mapping[str, str],
    submission_files: Mapping[str, str],
    task_files: Mapping[str, str],
    backend: Sandbox,
    *,
    seed: int | None = None,
    limits: Limits | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Reprofile:
    """Profile the reference program and the submission, each in a sandbox of its own,
    and compare them (see the module's docstring). ``seed``: the secret seed the
    inputs come from, drawn here when not given (tests pin it). ``limits`` apply to
    each sandbox, whose wall time spans the whole grading (both live until the end);
    ``timeout_s`` bounds each command (a ``run``, a timed batch)."""
    seed = secrets.randbelow(2**31) if seed is None else seed
    nonce = secrets.token_hex(8)
    result = Reprofile(spec.signal, SideMeasure("reference"), SideMeasure("submission"), seed=seed)
    inputs_text = task_files.get(spec.inputs_module)
    if inputs_text is None:
        result.task_problem = f"the task has no inputs module {spec.inputs_module!r}"
        return result
    limits = limits or Limits()
    plan = _seed_plan(spec, seed)
    programs: list[_Program] = []
    try:
        for role, files in (("reference", reference_files), ("submission", submission_files)):
            programs.append(_Program(role, backend, _request(spec, files, inputs_text, limits)))
        reference, submission = programs
        reference.hello()
        submission.hello()
        _measure(reference, submission, spec, plan, nonce, timeout_s)
    finally:
        for program in programs:
            program.finish()
    result.reference, result.submission = reference.measure, submission.measure
    for program in programs:
        _count_trace(program, spec, nonce)
    result.integrity = list(submission.measure.integrity)
    result.task_problem = _task_problem(reference.measure)
    if result.task_problem or not submission.measure.outputs_ok:
        return result
    _compare(result, spec, reference, submission)
    if not result.task_problem and not submission.measure.error_kind:
        _signal_ratio(result, spec)
    return result


def _measure(
    reference: _Program,
    submission: _Program,
    spec: ProgramSpec,
    plan: dict[str, Any],
    nonce: str,
    timeout_s: float,
) -> None:
    """Drive both runners: the reference's run, then the submission's (never while the
    reference's failed: the submission's code is not even imported then), the timed
    batches, and every call's outputs."""
    _run(reference, submission, spec, plan, nonce, timeout_s)
    if not reference.alive:
        return
    # The submission's outputs may take twice the reference's and some room, its trace
    # the most a trace may: a reply is held whole before its outputs are checked.
    cap = 2 * reference.run_outputs_bytes + REPLY_ROOM + MAX_TRACE_BYTES
    _run(submission, reference, spec, plan, nonce, timeout_s, cap)
    if spec.signal == "step_time" and submission.alive:
        _time(reference, submission, spec, plan, timeout_s)
    reference.assemble()
    if reference.measure.outputs_ok:
        submission.assemble(2 * reference.outputs_bytes + REPLY_ROOM)
