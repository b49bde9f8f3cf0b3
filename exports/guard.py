"""A last check that no row quotes a hidden task file.

Rows are built only from what solvers see (the statement and prompt files), the
submissions' own files, what reviewers wrote and an allow-list of grading
fields; hidden files and grading reports' free text are never read into a row.
But a submission or a reviewer's feedback can still quote a hidden file (a
reviewer sees them all), and such a row is withheld.

What counts as quoting. Lines are compared with all their whitespace removed.
A hidden file's *distinctive* lines are the ones that could only have come from
it: not lines a solver is shown (the task's statement and prompt files), not the
interface every solution declares (``class ModelNew``, ``def forward(...)``,
``get_inputs``, ``super().__init__()``, ...), not imports, includes or
decorators, not lines too short to prove anything, and not *common* lines:
a built-in list of idioms every Triton, PyTorch or C++ extension writer uses
(``BOILERPLATE``), lines of any task's public files, and lines found in the
files of two or more different tasks (``CommonLines``).

A text quotes a hidden file when distinctive lines of that file follow one
another in it as they follow one another in the file, worth ``RUN`` together:
lines that prove nothing may sit between them in either, but any other line
breaks the run. A line counts 1 when it holds a name, word or number of its
own, and ``GENERIC_WEIGHT`` when it is made only of common ones (the
``VOCABULARY``, every token of the platform's public files and of two or more
tasks): independent solutions converge on such lines (``mask = cols < d``,
``a = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0)``), so it
takes twice as many of them. A hidden file whose distinctive lines are worth
less than ``RUN`` is quoted by all of them, unless every one of them is also a
line of a larger hidden file of the task (a one-line negative fix whose line is
the expert fix's): it is then quoted as that file is.

Scattered lines that an honest solution happens to share with the expert
solution do not make a run; a pasted passage of the reference, the expert
solution, a negative or a hidden test does. ``exports.guard_check`` measures
both on the catalog (``bench/export.py --guard-only`` prints the figures).
"""

from __future__ import annotations

import builtins
import hashlib
import keyword
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIN_CHARS = 10  # non-space characters; shorter lines ("return y", "}") prove nothing
RUN = 3.0  # weight of distinctive lines of one hidden file, in its order, that makes a quote
GENERIC_WEIGHT = 0.5  # a distinctive line made only of common names and numbers
MAX_REPEATS = 16  # a line a hidden file repeats more often is filler, not its own

SPACES = " \t\r\f\v"
_NO_SPACE = str.maketrans("", "", SPACES)
_NO_SPACE_BYTES = SPACES.encode()

# Lines every solution of a KernelBench task has, whatever it computes: imports and
# includes, the interface the statement asks for, decorators, entry points.
_STRUCTURAL = re.compile(
    r"""^(?:
        (?:import|from)\s                                  # Python imports
      | \#(?:include|pragma\s+once|if|ifdef|ifndef|endif|else|define\s+\w+\s*$)\b
      | using\s+namespace\s
      | @[\w.]+\s*(?:\(\s*\))?\s*$                          # a bare decorator
      | class\s+(?:ModelNew|Model)\b                         # the interface
      | def\s+(?:forward|__init__|get_inputs|get_init_inputs)\s*\(
      | super\s*\([^)]*\)\s*\.\s*__init__\s*\(\s*\)\s*$
      | if\s+__name__\s*==
      | (?:---|\+\+\+|@@)\s                                # a unified diff's headers
    )""",
    re.VERBOSE,
)
_SELF_ASSIGNMENT = re.compile(r"^self\.(\w+)\s*(?::[^=]+)?=\s*\1\s*$")  # self.eps = eps

# Idioms of the public Triton tutorials (vector add, softmax, layer norm, matmul, fused
# attention), the PyTorch C++ extension docs and everyday PyTorch: lines independent
# solutions write the same way. See exports.guard_check for what it is measured on.
BOILERPLATE = """
pid = tl.program_id(0)
pid = tl.program_id(axis=0)
pid = tl.program_id(0).to(tl.int64)
row = tl.program_id(0)
row = tl.program_id(0).to(tl.int64)
row_idx = tl.program_id(0)
row_idx = tl.program_id(axis=0)
block_start = pid * BLOCK_SIZE
block_start = pid * BLOCK
offsets = block_start + tl.arange(0, BLOCK_SIZE)
offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
offs = pid * BLOCK + tl.arange(0, BLOCK)
offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
cols = tl.arange(0, BLOCK)
cols = tl.arange(0, BLOCK_SIZE)
col_offsets = tl.arange(0, BLOCK_SIZE)
offs = tl.arange(0, BLOCK)
offs = tl.arange(0, BLOCK_SIZE)
mask = offsets < n_elements
mask = offs < n_elements
mask = offsets < n
mask = offs < n
mask = cols < n_cols
mask = col_offsets < n_cols
mask = offs < n_cols
x = tl.load(x_ptr + offsets, mask=mask)
x = tl.load(x_ptr + offs, mask=mask)
y = tl.load(y_ptr + offsets, mask=mask)
x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
x = tl.load(x_ptr + offs, mask=mask, other=0.0)
output = x + y
tl.store(output_ptr + offsets, output, mask=mask)
tl.store(out_ptr + offsets, out, mask=mask)
tl.store(out_ptr + offs, out, mask=mask)
tl.store(y_ptr + offsets, y, mask=mask)
tl.store(y_ptr + offs, y, mask=mask)
row_start_ptr = input_ptr + row_idx * input_row_stride
input_ptrs = row_start_ptr + col_offsets
row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float('inf'))
row_minus_max = row - tl.max(row, axis=0)
numerator = tl.exp(row_minus_max)
denominator = tl.sum(numerator, axis=0)
softmax_output = numerator / denominator
output_row_start_ptr = output_ptr + row_idx * output_row_stride
output_ptrs = output_row_start_ptr + col_offsets
tl.store(output_ptrs, softmax_output, mask=col_offsets < n_cols)
n_rows, n_cols = x.shape
n_elements = x.numel()
n = x.numel()
BLOCK_SIZE = triton.next_power_of_2(n_cols)
BLOCK = triton.next_power_of_2(n_cols)
grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']),)
grid = (triton.cdiv(n, BLOCK),)
grid = (triton.cdiv(n, BLOCK_SIZE),)
grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
grid = (n_rows,)
num_warps = 4
num_warps = 8
output = torch.empty_like(x)
out = torch.empty_like(x)
y = torch.empty_like(x)
x = x.contiguous()
assert x.is_cuda
assert x.is_contiguous()
return output
return out
return y
TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
TORCH_CHECK(x.dtype() == torch::kFloat32, "x must be float32");
TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
TORCH_CHECK(x.device().is_cpu(), "x must be a CPU tensor");
auto x_c = x.contiguous();
auto xc = x.contiguous();
auto out = torch::empty_like(x);
auto y = torch::empty_like(x);
auto out = torch::empty_like(xc);
auto y = torch::empty_like(xc);
const float* src = x.data_ptr<float>();
const float* x_ptr = x.data_ptr<float>();
float* dst = y.data_ptr<float>();
float* out_ptr = out.data_ptr<float>();
float* y_ptr = y.data_ptr<float>();
const int64_t n = x.numel();
const int64_t rows = x.size(0);
const int64_t cols = x.size(1);
#pragma omp parallel for
#pragma omp parallel for schedule(static)
#pragma omp simd
for (int64_t i = 0; i < n; ++i) {
for (int64_t i = 0; i < rows; ++i) {
for (int64_t j = 0; j < cols; ++j) {
for (int64_t j = 0; j < n; ++j) {
for (int i = 0; i < n; ++i) {
for (int i = 0; i < n; i++) {
float sum = 0.0f;
float acc = 0.0f;
return out;
return y;
extra_cflags=["-O3", "-fopenmp"],
extra_ldflags=["-fopenmp"],
verbose=False,
cpp_sources=cpp_source,
cpp_sources=CPP_SOURCE,
functions=["forward"],
pid_m = tl.program_id(0)
pid_n = tl.program_id(1)
rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
rk = tl.arange(0, BLOCK_K)
acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
acc += tl.dot(a, b)
num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
num_pid_in_group = GROUP_SIZE_M * num_pid_n
group_id = pid // num_pid_in_group
first_pid_m = group_id * GROUP_SIZE_M
group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
pid_n = (pid % num_pid_in_group) // group_size_m
offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
offs_k = tl.arange(0, BLOCK_SIZE_K)
a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
accumulator = tl.dot(a, b, accumulator)
a_ptrs += BLOCK_SIZE_K * stride_ak
b_ptrs += BLOCK_SIZE_K * stride_bk
offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
X += row * stride
Y += row * stride
_mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
_var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
cols = off + tl.arange(0, BLOCK_SIZE)
a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
mean = tl.sum(_mean, axis=0) / N
var = tl.sum(_var, axis=0) / N
rstd = 1 / tl.sqrt(var + eps)
mask = cols < N
w = tl.load(W + cols, mask=mask)
b = tl.load(B + cols, mask=mask)
x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
x_hat = (x - mean) * rstd
y = x_hat * w + b
tl.store(Y + cols, y, mask=mask)
m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
qk_scale = sm_scale * 1.44269504
m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
p = tl.math.exp2(qk)
l_ij = tl.sum(p, 1)
alpha = tl.math.exp2(m_i - m_ij)
l_i = l_i * alpha + l_ij
acc = acc * alpha[:, None]
m_i = m_ij
"""


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*")

# Names and words kernel code of every kind uses (with the keywords and builtins of
# Python and every token of BOILERPLATE): a line made of nothing else is generic,
# and weighs GENERIC_WEIGHT in a run.
VOCABULARY = """
tl triton torch nn F np math std at c10 jit constexpr autotune heuristics Config cdiv
next_power_of_2 program_id num_programs arange load store zeros full zeros_like where
maximum minimum max min sum cumsum exp exp2 log log2 sqrt rsqrt abs dot trans reshape
view broadcast_to expand_dims sigmoid erf tanh floor ceil fma clamp atomic_add atomic_max
static_range range float32 float16 bfloat16 float8e4nv float64 int64 int32 int16 int8
uint8 uint32 bool dtype element_ty to bitcast other mask axis keep_dims num_warps
num_stages input_precision allow_tf32 empty empty_like new_empty contiguous stride shape
numel size device is_cuda is_contiguous data_ptr detach Tensor Module Parameter Linear
LayerNorm Conv1d weight bias eps scale cuda cpu float half long int unsigned auto void
const static inline return for while if else double size_t int64_t int32_t uint32_t
TORCH_CHECK kFloat32 kFloat kInt64 kLong options data sizes scalar_type omp pragma
parallel simd schedule collapse reduction dynamic guided load_inline cpp_sources
cuda_sources functions extra_cflags extra_ldflags extra_cuda_cflags verbose name
x y z a b c d e h i j k l m n p q r s t u v w
xs ys out outs output inp input src dst res result results tmp val vals value values
row rows col cols column columns off offs offset offsets idx index indices start end
stop step first last begin lo hi mid base ptr ptrs x_ptr y_ptr z_ptr out_ptr in_ptr
inp_ptr src_ptr dst_ptr input_ptr output_ptr w_ptr b_ptr weight_ptr bias_ptr pid pid_m
pid_n pid_k block blocks BLOCK BLOCK_SIZE BLOCK_M BLOCK_N BLOCK_K BLOCK_D BLOCK_C BLOCK_L
BLOCK_T TILE tile tiles chunk chunks CHUNK grid acc accum total count counts
norm mean var variance std rstd inv M N K D H L B C T S V
n_rows n_cols n_elements width height length seq seq_len batch batch_size heads
head head_dim dim hidden channels stride_x stride_y stride_row row_stride col_stride
x_row y_row out_row mask_ptr lane lanes ok valid live keep inside in_bounds
"""


def code(line: str) -> str:
    """A line without a unified diff's ``+`` or ``-`` marker: a diff's lines compare
    as the code they add or remove (a fix's removed lines are the public source; its
    added lines, pasted as code, are still the hidden fix's). A diff's lines pasted
    with an indent keep their marker after it; it goes too."""
    stripped = line.lstrip(SPACES)
    if stripped.startswith(("+", "-")) and not stripped.startswith(("+++", "---")):
        return stripped[1:]
    return line


def key(line: str) -> str:
    """A line as the guard compares it: its code, every space and tab removed."""
    return code(line).translate(_NO_SPACE)


def tokens(line: str) -> list[str]:
    """Its names, words and numbers."""
    return _TOKEN.findall(line)


def is_structural(line: str) -> bool:
    """An import, include, decorator, interface or diff header line: every solution
    has one."""
    stripped = code(line).strip()
    return bool(_STRUCTURAL.match(stripped) or _SELF_ASSIGNMENT.match(stripped))


def substantive(line: str) -> bool:
    """Long enough to prove something, and not structural."""
    return len(key(line)) >= MIN_CHARS and not is_structural(line)


@dataclass(frozen=True)
class Common:
    """Lines that prove nothing, and names and numbers that make a line generic."""

    lines: frozenset[str]
    tokens: frozenset[str]


BUILT_IN = Common(
    lines=frozenset(key(line) for line in BOILERPLATE.splitlines() if line.strip()),
    tokens=frozenset([*tokens(VOCABULARY), *keyword.kwlist, *dir(builtins), *tokens(BOILERPLATE)]),
)


class CommonLines:
    """What the platform's tasks show to be common: every line and token of any
    task's public files, and every line and token found in the files of two or
    more different tasks, besides the built-in ones. Files with identical
    content count once (a task copied under another slug does not make its
    hidden lines common)."""

    def __init__(self) -> None:
        self.lines: set[str] = set(BUILT_IN.lines)
        self.tokens: set[str] = set(BUILT_IN.tokens)
        self._line_task: dict[str, object] = {}
        self._token_task: dict[str, object] = {}
        self._contents: set[bytes] = set()

    def add(self, task: object, content: str, *, public: bool) -> None:
        # A public copy of a hidden file makes its lines public all the same.
        digest = hashlib.blake2b(content.encode(), digest_size=16, person=b"p" if public else b"h")
        if digest.digest() in self._contents:
            return
        self._contents.add(digest.digest())
        for raw in content.split("\n"):
            line = key(raw)
            if len(line) >= MIN_CHARS:
                _count(line, task, public, self.lines, self._line_task)
            for token in tokens(raw):
                _count(token, task, public, self.tokens, self._token_task)

    def frozen(self) -> Common:
        return Common(lines=frozenset(self.lines), tokens=frozenset(self.tokens))


def _count(
    item: str, task: object, public: bool, common: set[str], first: dict[str, object]
) -> None:
    if item in common:
        return
    if public or first.setdefault(item, task) != task:
        common.add(item)
        first.pop(item, None)


@dataclass(frozen=True, slots=True)
class Quote:
    """Where a text quotes a hidden file: lines ``lines`` (1-based, inclusive) of
    the part named ``part`` hold ``matched`` distinctive lines of the hidden file
    ``hidden_path``, its lines ``hidden_lines``."""

    part: str
    lines: tuple[int, int]
    hidden_path: str
    hidden_lines: tuple[int, int]
    matched: int


@dataclass(slots=True)
class _Hidden:
    path: str
    numbers: list[int]  # its distinctive lines' numbers in the file (1-based), in order
    weights: list[float]
    need: float
    lines: frozenset[str]  # its distinctive lines, as keys


class HiddenGuard:
    """Built once per task version from its hidden files (path and content), the
    texts a solver is shown, and the common lines and tokens of the platform."""

    def __init__(
        self,
        hidden: Iterable[tuple[str, str]],
        public: Iterable[str],
        common: Common = BUILT_IN,
    ) -> None:
        ignored = set(common.lines)
        vocabulary = set(common.tokens)
        for text in public:
            for line in text.split("\n"):
                ignored.add(key(line))
                vocabulary.update(tokens(line))
        self.ignored = frozenset(ignored)
        self.vocabulary = frozenset(vocabulary)
        self.files: list[_Hidden] = []
        # distinctive line -> (file index, position among the file's distinctive lines)
        self.where: dict[str, list[tuple[int, int]]] = {}
        for path, text in hidden:
            self._add(path, text)
        # A hidden file whose every distinctive line is also in a larger one (a one-line
        # negative fix whose line is the expert fix's too) holds nothing of its own: it
        # is quoted as the larger file is, or an honest fix writing that line would be.
        for small in self.files:
            for large in self.files:
                if small.lines <= large.lines and large.need > small.need:
                    small.need = large.need
        self.fewest = min((f.need for f in self.files), default=0.0)
        # The distinctive lines as UTF-8, for the fast path (bytes.translate is C all
        # through), also as a diff's added or removed line, whose marker the fast path
        # does not drop.
        self._encoded = frozenset(
            marker + line.encode() for line in self.where for marker in (b"", b"+", b"-")
        )

    def weight(self, line: str) -> float:
        """1 for a line with a name, word or number of its own, else GENERIC_WEIGHT."""
        if any(token not in self.vocabulary for token in tokens(line)):
            return 1.0
        return GENERIC_WEIGHT

    def _add(self, path: str, text: str) -> None:
        numbers, weights, keys = [], [], []
        raw_lines = text.split("\n")
        repeats = Counter(map(key, raw_lines))
        for number, raw in enumerate(raw_lines, start=1):
            line = key(raw)
            if line in self.ignored or repeats[line] > MAX_REPEATS or not substantive(raw):
                continue
            keys.append(line)
            numbers.append(number)
            weights.append(self.weight(raw))
        if not keys:
            return
        index = len(self.files)
        distinct = dict(zip(keys, weights, strict=True))
        need = min(RUN, sum(distinct.values()))
        self.files.append(_Hidden(path, numbers, weights, need, frozenset(keys)))
        for position, line in enumerate(keys):
            self.where.setdefault(line, []).append((index, position))

    def quotes_hidden(self, *texts: str) -> bool:
        return self.find([("text", text) for text in texts]) is not None

    def find(self, parts: Iterable[tuple[str, str]]) -> Quote | None:
        """The longest quote of a hidden file in the first named text that has one."""
        if not self.files:
            return None
        for name, text in parts:
            if not text:
                continue
            # Fast path (C all through): no hidden line at all in the text, or too few.
            lines = text.encode().translate(None, _NO_SPACE_BYTES).split(b"\n")
            if len(self._encoded.intersection(lines)) < self.fewest:
                continue
            quote = self._run(name, text.split("\n"))
            if quote is not None:
                return quote
        return None

    def _run(self, name: str, lines: Sequence[str]) -> Quote | None:
        best: Quote | None = None
        best_weight = 0.0
        # (file, next position expected) -> (first line number here, first position, lines, weight)
        active: dict[tuple[int, int], tuple[int, int, int, float]] = {}
        for number, raw in enumerate(lines, start=1):
            line = key(raw)
            places = self.where.get(line)
            if places is None:
                if line in self.ignored or not substantive(raw):
                    continue  # proves nothing either way: the run goes on
                active = {}
                continue
            extended: dict[tuple[int, int], tuple[int, int, int, float]] = {}
            for file, position in places:
                hidden = self.files[file]
                start, first, count, weight = active.get(
                    (file, position), (number, position, 0, 0.0)
                )
                count += 1
                weight += hidden.weights[position]
                extended[(file, position + 1)] = (start, first, count, weight)
                if weight >= hidden.need and weight > best_weight:
                    best_weight = weight
                    best = Quote(
                        part=name,
                        lines=(start, number),
                        hidden_path=hidden.path,
                        hidden_lines=(hidden.numbers[first], hidden.numbers[position]),
                        matched=count,
                    )
            active = extended
        return best
