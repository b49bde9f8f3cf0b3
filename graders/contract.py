"""The contract every task kind implements.

A task kind (kernel, debugging, profiling, serving, ...) is one subclass of
``TaskKind`` in its own folder under ``graders/``, registered in
``graders.registry``. Everything the rest of the platform needs to know about
a kind goes through it:

- ``parse_grading``: check a bundle's ``[grading]`` table (and the files it
  names); every error is a ``GradingTableError`` naming the file and field;
- ``default_grading``: the table a new draft starts with;
- ``public_grading``: what of that table a solver (through the API) and a
  training team (in an RL export) may see, by allow-list;
- ``grade``: a grading message in, a report dict out; never raises;
- ``public_report``: what a solver, an API client and an export may see of a
  report (hidden tests, answer keys, reference outputs, hidden file names and
  operator notes never);
- ``rule_types``, ``check_kind_rule`` and ``score_rule``: the automatic rubric
  rules the kind offers, what their parameters may be, and how each is scored
  from a report;
- ``metrics`` and ``metric_values``: the named figures a grading produces
  (name, unit, direction), stored, charted and exported by name;
- ``needs``: the queue, hardware and time budget a grading needs;
- ``summary_lines`` and ``headline``: the kind's figures in a report, for
  ``manage.py grade`` and the ``validate_tasks`` table;
- ``problem_file_task``: a bare problem file as a task, for kinds whose
  problems come as single files (KernelBench, GPU MODE); others take bundles.

Nothing here imports Django: graders run on sandbox hosts with no database.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from .verdicts import Verdict

REASON_CHARS = 2000
MAX_INTEGRITY_ITEMS = 50
LOG_TAIL_CHARS = 4000  # per stream; a deployment may show less

# Queue names: the CPU pool takes every grading that needs no accelerator (and the
# correctness checks of GPU tasks where no pool of their hardware is configured).
CPU_QUEUE = "grading.cpu"


def gpu_queue(hardware: str) -> str:
    return f"grading.gpu.{hardware}"


@dataclass(frozen=True)
class Metric:
    """A named figure a grading of the kind produces."""

    name: str
    unit: str  # "x" (a ratio), "s", "count", "" (a plain number)
    direction: Literal["higher", "lower"]  # which is better
    description: str


@dataclass(frozen=True)
class RuleType:
    """An automatic rubric rule: its ``type`` in a bundle's rubric and its parameters
    (name -> what it means)."""

    name: str
    description: str
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GradingNeeds:
    queue: str
    hardware: str  # the hardware class the grading runs on ("cpu", "h100", ...)
    time_budget_s: float  # the most one grading may take, sandbox start to report


@dataclass(frozen=True)
class RetryPolicy:
    """How often a grading the platform failed (``internal_error``, a lost worker) is
    tried again, and how long to wait before each new attempt."""

    max_attempts: int = 3
    backoff_s: float = 10.0

    def should_retry(self, attempts_made: int) -> bool:
        return attempts_made < self.max_attempts

    def delay_s(self, attempts_made: int) -> float:
        """10 s, 20 s, ...: a sick host has time to recover."""
        return self.backoff_s * attempts_made


RETRY = RetryPolicy()


@dataclass(frozen=True)
class TaskFileInfo:
    """A task file as validation sees it."""

    path: str
    role: str
    expected_verdict: str  # negatives only
    text: str


@dataclass(frozen=True)
class ValidationCandidate:
    """One grading a validation run makes: what is graded, as what, and the verdict it
    must get. ``path`` is a bundle file's path, or a label in parentheses for a
    grading of the kind's own (``"(unchanged source)"``); ``role`` the role of what is
    graded; ``overrides`` go into the grading message."""

    path: str
    role: str
    expected_verdict: str
    submission_files: Mapping[str, str]
    overrides: Mapping[str, Any] = field(default_factory=dict)


class GradingTableError(ValueError):
    """A problem in a bundle's grading settings, naming the file and the field."""

    def __init__(self, field: str, message: str, *, file: str = "task.toml") -> None:
        super().__init__(f"{file}: {field}: {message}")
        self.file = file
        self.field = field
        self.message = message


# Rules every kind offers: they read only the verdict and the integrity findings,
# which every report has.
COMMON_RULE_TYPES: tuple[RuleType, ...] = (
    RuleType(
        "verdict",
        "the grading ends in this verdict",
        {"equals": "the verdict wanted (default: accepted)"},
    ),
    RuleType(
        "integrity",
        "the grader's integrity checks found nothing (counts only for accepted submissions)",
        {"clean": "true: no findings wanted (default); false: findings wanted"},
    ),
)


class TaskKind(ABC):
    """One task kind's grader and everything the platform needs to know about it."""

    name: ClassVar[str]  # the ``kind`` of a bundle's task.toml
    label: ClassVar[str]  # for people: "GPU kernel", "Debugging"
    metrics: ClassVar[tuple[Metric, ...]] = ()
    # The kind's own rule types; ``rule_types()`` adds the common ones.
    kind_rule_types: ClassVar[tuple[RuleType, ...]] = ()
    # The authoring UI's grading form for the kind, by name (None: no form yet; the
    # UI says so and offers the bundle upload instead).
    authoring_form: ClassVar[str | None] = None

    # -- bundles ----------------------------------------------------------------------

    # Whether a bundle of the kind must have a ``[grading]`` table.
    grading_required: ClassVar[bool] = True

    @abstractmethod
    def parse_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> Any:
        """Check a bundle's ``[grading]`` table (in ``manifest``, the parsed
        ``task.toml``) against the bundle's files (path -> text) and return the kind's
        parsed settings; raise ``GradingTableError`` naming the file and field."""

    @abstractmethod
    def default_grading(self) -> dict[str, Any]:
        """The ``[grading]`` table a new draft of the kind starts with."""

    def check_draft_grading(self, manifest: Mapping[str, Any], files: Mapping[str, str]) -> None:
        """Check a draft's ``[grading]`` table as an author edits it; raise
        ``GradingTableError`` for a problem of the table. A problem of the draft's files
        (a reference not written yet) is not the table's: the bundle check reports it
        on the file, so it is not raised here."""
        try:
            self.parse_grading(manifest, files)
        except GradingTableError as error:
            if error.file == "task.toml" and error.field.startswith("grading"):
                raise

    def public_grading(
        self, grading: Mapping[str, Any], shown_paths: Collection[str]
    ) -> dict[str, Any]:
        """The settings of a task's ``[grading]`` table that anyone but its experts may
        see: solvers through the API and training teams in RL exports. An allow-list:
        a kind shows what it lists here, and nothing by default. ``shown_paths`` are
        the task's files solvers are shown (a kind may name its visible tests)."""
        return {}

    def answer_paths(self, grading: Mapping[str, Any], roles: Mapping[str, str]) -> frozenset[str]:
        """The hidden files a right answer is meant to reproduce (an answer key, the
        expert's and the negatives' answers), given each file's role by path. The
        export guard does not count quoting them: every honest answer would. None
        by default: where answers are programs, quoting the expert's is a leak."""
        return frozenset()

    def validation_candidates(
        self, manifest: Mapping[str, Any], files: Sequence[TaskFileInfo]
    ) -> list[ValidationCandidate]:
        """What validating a task grades: by default its expert solution (which must be
        accepted) and each negative example (which must get its expected verdict), each
        graded as a submission would be, alone under its own name. A kind adds its own
        checks (a debugging task's unchanged source must fail its tests)."""
        ordered = sorted(files, key=lambda f: (f.role != "solution", f.path))
        return [
            ValidationCandidate(
                path=f.path,
                role=f.role,
                expected_verdict=(
                    Verdict.ACCEPTED.value if f.role == "solution" else f.expected_verdict
                ),
                submission_files={f.path.rpartition("/")[2]: f.text},
            )
            for f in ordered
            if f.role in ("solution", "negative")
        ]

    # -- grading ----------------------------------------------------------------------

    @abstractmethod
    def grade(self, message: Mapping[str, Any], *, backend_name: str) -> dict[str, Any]:
        """Grade the submission a message describes (``manifest``, ``task_files``,
        ``submission_files``; optionally ``overrides``, settings for this run such as
        ``trials`` or ``hardware``, which the kind honours where it has them); return
        the report as a dict. Never raises: a failure of the platform is an
        ``internal_error`` report, one of the task a ``task_error``."""

    def needs(self, *, hardware: str, gpu_pools: Sequence[str]) -> GradingNeeds:
        """Where a grading of a task targeting ``hardware`` runs, given the GPU pools
        this deployment has."""
        queue = gpu_queue(hardware) if hardware != "cpu" and hardware in gpu_pools else CPU_QUEUE
        return GradingNeeds(queue=queue, hardware=hardware, time_budget_s=self.time_budget_s)

    time_budget_s: ClassVar[float] = 900.0

    # -- reports ----------------------------------------------------------------------

    def public_report(
        self, report: Mapping[str, Any], *, log_tail_chars: int = LOG_TAIL_CHARS
    ) -> dict[str, Any]:
        """What anyone but an operator may see of a report, by allow-list: the fields
        every report has (``common_public_report``) and the kind's own
        (``public_details``). Anything a kind adds to its reports stays private until
        the kind lists it there."""
        return {**common_public_report(report, log_tail_chars), **self.public_details(report)}

    @abstractmethod
    def public_details(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """The kind's own report fields a solver may see (never hidden tests, answer
        keys, reference outputs or hidden file names)."""

    def metric_values(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        """The kind's metrics, by name, read from a report (None where not measured)."""
        return {metric.name: None for metric in self.metrics}

    def metrics_of(self, report: Mapping[str, Any]) -> dict[str, float | None]:
        """``metric_values`` checked against the declared metrics: every declared name,
        nothing else, each a finite number or None. What a grading run stores."""
        values = self.metric_values(report)
        checked: dict[str, float | None] = {}
        for metric in self.metrics:
            value = values.get(metric.name)
            number = (
                float(value)
                if isinstance(value, int | float) and not isinstance(value, bool)
                else None
            )
            checked[metric.name] = number if number is not None and math.isfinite(number) else None
        return checked

    def summary_lines(self, report: Mapping[str, Any]) -> list[str]:
        """The kind's own lines in ``manage.py grade``'s text report (after the verdict
        and reason, before integrity, duration and logs)."""
        return []

    def headline(self, report: Mapping[str, Any]) -> str:
        """The kind's main figure in a few characters, for tables (``validate_tasks``):
        "" when it has none."""
        return ""

    def problem_file_task(self, path: Path) -> tuple[dict[str, Any], dict[str, str]]:
        """A bare problem file as a task: the manifest a bundle of it would have and its
        files. Raise ``ValueError`` saying why it cannot be one."""
        raise ValueError(f"{self.name} tasks come as bundle folders (task.toml), not single files")

    # -- rubrics ----------------------------------------------------------------------

    @classmethod
    def rule_types(cls) -> tuple[RuleType, ...]:
        return (*COMMON_RULE_TYPES, *cls.kind_rule_types)

    def score_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        """Whether an automatic rule holds for a report, and why (shown to reviewers).
        ``on_target``: the grading ran on the task's own hardware."""
        kind = rule.get("type")
        verdict = report.get("verdict")
        if kind == "verdict":
            expected = rule.get("equals", Verdict.ACCEPTED.value)
            return verdict == expected, f"verdict {verdict}, rule wants {expected}"
        if kind == "integrity":
            violations = (report.get("integrity") or {}).get("violations") or []
            want_clean = bool(rule.get("clean", True))
            if want_clean and verdict != Verdict.ACCEPTED:
                # A run that failed was never checked through: "no findings" earns nothing.
                return (
                    False,
                    f"verdict {verdict}: a clean record counts only for accepted submissions",
                )
            return (not violations) == want_clean, f"{len(violations)} integrity finding(s)"
        return self.score_kind_rule(rule, report=report, on_target=on_target)

    def check_kind_rule(self, rule: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Problems with the parameter values of one of the kind's own rules, as
        (parameter, message); the type and the parameter names are checked already."""
        return []

    def score_kind_rule(
        self, rule: Mapping[str, Any], *, report: Mapping[str, Any], on_target: bool
    ) -> tuple[bool, str]:
        """The kind's own rule types (``kind_rule_types``)."""
        return False, f"unknown rule type {rule.get('type')!r} for {self.name} tasks"


def tail(text: Any, limit: int) -> str:
    text = str(text or "")
    return text if len(text) <= limit else "\N{HORIZONTAL ELLIPSIS}" + text[-limit:]


def scalars(table: Any) -> dict[str, Any]:
    """A table's plain values (strings, numbers, booleans); nested tables dropped."""
    if not isinstance(table, Mapping):
        return {}
    return {str(k): v for k, v in table.items() if isinstance(v, str | int | float | bool)}


def pick(data: Any, keys: Sequence[str]) -> dict[str, Any]:
    """The listed keys of a mapping (nothing if it is not one)."""
    if not isinstance(data, Mapping):
        return {}
    return {key: data[key] for key in keys if key in data}


def common_public_report(report: Mapping[str, Any], log_tail_chars: int) -> dict[str, Any]:
    """The fields every kind's report has, as a solver may see them. Never
    ``operator_notes`` (free text for operators, which may quote hidden files) nor
    ``artifacts``; logs (the submission's own output) keep only their tails."""
    integrity = report.get("integrity")
    integrity = integrity if isinstance(integrity, Mapping) else {}
    logs = report.get("logs")
    logs = logs if isinstance(logs, Mapping) else {}
    hardware = report.get("hardware")
    hardware = hardware if isinstance(hardware, Mapping) else {}
    return {
        "verdict": report.get("verdict"),
        "reason": tail(report.get("reason"), REASON_CHARS),
        "integrity": {
            key: [str(item) for item in list(integrity.get(key) or [])[:MAX_INTEGRITY_ITEMS]]
            for key in ("checks", "violations")
        },
        "hardware": {str(k): v for k, v in hardware.items() if isinstance(v, str | int | float)},
        "logs": {
            str(name): tail(text, log_tail_chars)
            for name, text in logs.items()
            if name in ("stdout", "stderr")
        },
        "duration_s": report.get("duration_s"),
    }
