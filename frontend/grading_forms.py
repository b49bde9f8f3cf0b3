"""The grading tab's forms, one per task kind that has one.

Each turns the kind's ``[grading]`` table into fields and back. Ranges and rules
stay the kind's: the view saves the table through the authoring service, which
checks it with the kind's own parser, and a ``GradingTableError`` lands beside
the field its dotted path names (``field_for``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from graders.contract import GradingTableError
from graders.debugging.spec import DEFAULT_TOLERANCES as DEBUG_TOLERANCES
from graders.debugging.spec import test_functions
from graders.kernel.spec import DEFAULT_TOLERANCES as KERNEL_TOLERANCES
from graders.kernel.spec import FORMATS, LANGUAGES
from tasks.models import FileRole, Task, Visibility

from .authoring_forms import CODE_WIDGET_ATTRS, apply_errors, normalise_newlines

# Output dtypes offered in the tolerance table; others stay editable in task.toml.
TOLERANCE_DTYPES = ("float32", "float16", "bfloat16", "float64")
TIMING_INTS = ("warmup", "min_batches", "max_batches")
TIMING_FLOATS = ("target_rel_error", "budget_s", "call_timeout_s")


def toml_widget(rows: int, placeholder: str) -> forms.Textarea:
    return forms.Textarea(
        attrs={
            **CODE_WIDGET_ATTRS,
            "rows": rows,
            "data-language": "toml",
            "data-editor": True,
            "placeholder": placeholder,
        }
    )


def limits_field() -> forms.CharField:
    return forms.CharField(
        required=False,
        strip=False,
        label="Sandbox limits",
        help_text="Overrides in TOML, e.g. wall_time_s = 300.",
        widget=toml_widget(3, "wall_time_s = 300"),
    )


class KindGradingForm(forms.Form):
    """What every kind's grading form shares: the tolerance table, TOML fields, and
    errors of the kind's table put beside the field they name."""

    # Tolerances by dtype, (atol, rtol), shown as placeholders; a dtype missing here
    # compares exactly unless the author sets one.
    default_tolerances: ClassVar[Mapping[str, tuple[float, float]]] = {}

    @classmethod
    def for_task(cls, task: Task, data: Mapping[str, Any] | None) -> KindGradingForm:
        """The form for ``task``: bound to ``data`` when posted, else filled from the
        task's table."""
        return cls(data, initial=cls.initial_from(task.grading or {}))

    @classmethod
    def initial_from(cls, grading: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def page_context(cls, request: HttpRequest, task: Task) -> dict[str, Any]:
        """What else the kind's grading page shows beside the form (none by default)."""
        return {}

    def grading(self, existing: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def field_for(self, path: str) -> str | None:
        raise NotImplementedError

    # -- tolerances ------------------------------------------------------------------

    def add_tolerance_fields(self) -> None:
        for dtype in TOLERANCE_DTYPES:
            default = self.default_tolerances.get(dtype)
            for index, key in enumerate(("atol", "rtol")):
                placeholder = f"{default[index]:g}" if default else "exact"
                self.fields[f"tol_{dtype}_{key}"] = forms.FloatField(
                    required=False,
                    label=f"{dtype} {key}",
                    widget=forms.TextInput(
                        attrs={"placeholder": placeholder, "inputmode": "decimal"}
                    ),
                )

    def tolerance_rows(self) -> list[tuple[str, forms.BoundField, forms.BoundField]]:
        return [(d, self[f"tol_{d}_atol"], self[f"tol_{d}_rtol"]) for d in TOLERANCE_DTYPES]

    @staticmethod
    def tolerance_initial(grading: Mapping[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {}
        for dtype, tolerance in (grading.get("tolerances") or {}).items():
            for key in ("atol", "rtol"):
                if isinstance(tolerance, dict) and key in tolerance:
                    initial[f"tol_{dtype}_{key}"] = tolerance[key]
        return initial

    def tolerances(self, existing: Mapping[str, Any]) -> dict[str, Any]:
        """The tolerance table the form describes; dtypes it does not show are kept."""
        data = self.cleaned_data
        tolerances = {
            dtype: value
            for dtype, value in (existing.get("tolerances") or {}).items()
            if dtype not in TOLERANCE_DTYPES
        }
        for dtype in TOLERANCE_DTYPES:
            values = {
                key: data[f"tol_{dtype}_{key}"]
                for key in ("atol", "rtol")
                if data.get(f"tol_{dtype}_{key}") is not None
            }
            if values:
                tolerances[dtype] = values
        return tolerances

    # -- TOML fields and errors ------------------------------------------------------

    @staticmethod
    def toml_initial(value: Any) -> str:
        import tomli_w

        return tomli_w.dumps(value) if value else ""

    def toml(self, name: str) -> dict[str, Any]:
        text = normalise_newlines(self.cleaned_data.get(name) or "")
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValidationError({name: [f"not valid TOML: {exc}"]}) from None

    def add_table_error(self, error: GradingTableError) -> None:
        """Put the kind's error beside the field its dotted path names."""
        self.add_error(self.field_for(error.field), error.message)

    def tolerance_field_for(self, parts: Sequence[str]) -> str | None:
        if len(parts) >= 4:
            name = f"tol_{parts[2]}_{parts[3]}"
            return name if name in self.fields else None
        return None


class GradingForm(KindGradingForm):
    """The [grading] table of a kernel task, field by field."""

    default_tolerances = {
        dtype: (tolerance.atol, tolerance.rtol) for dtype, tolerance in KERNEL_TOLERANCES.items()
    }

    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS])
    language = forms.ChoiceField(
        choices=[(name, name) for name in LANGUAGES], help_text="What solutions are written in."
    )
    trials = forms.IntegerField(help_text="Correctness trials per shape set (at least 5).")
    seed_inputs = forms.BooleanField(
        required=False, label="Seed inputs", help_text="Seed torch before get_inputs()."
    )
    shapes = forms.CharField(
        required=False,
        strip=False,
        help_text="[[shapes]] tables in TOML; each key overrides a global of the reference. "
        "Empty: the reference's own sizes.",
        widget=toml_widget(8, '[[shapes]]\nname = "small"\nbatch_size = 4\ndim = 64'),
    )
    limits = limits_field()
    timing_shape = forms.CharField(required=False, label="Timed shape set")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_tolerance_fields()
        for name in TIMING_INTS:
            self.fields[f"timing_{name}"] = forms.IntegerField(required=False, label=name)
        for name in TIMING_FLOATS:
            self.fields[f"timing_{name}"] = forms.FloatField(
                required=False, label=name, widget=forms.TextInput(attrs={"inputmode": "decimal"})
            )

    @classmethod
    def initial_from(cls, grading: Mapping[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {
            "format": grading.get("format", "kernelbench"),
            "language": grading.get("language", "pytorch"),
            "trials": grading.get("trials", 5),
            "seed_inputs": grading.get("seed_inputs", True),
            "shapes": cls.toml_initial({"shapes": grading["shapes"]})
            if grading.get("shapes")
            else "",
            "limits": cls.toml_initial(grading.get("limits")),
            **cls.tolerance_initial(grading),
        }
        for name, value in (grading.get("timing") or {}).items():
            initial[f"timing_{name}"] = value
        return initial

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            shapes = self.toml("shapes")
            if set(shapes) - {"shapes"}:
                raise ValidationError({"shapes": ["write only [[shapes]] tables here"]})
            data["parsed_shapes"] = shapes.get("shapes")
            data["parsed_limits"] = self.toml("limits")
        except ValidationError as exc:
            apply_errors(self, exc)
        return data

    def grading(self, existing: Mapping[str, Any]) -> dict[str, Any]:
        """The [grading] table the valid form describes; keys the form does not show
        (tolerances for other dtypes) are kept from ``existing``."""
        data = self.cleaned_data
        grading: dict[str, Any] = {
            "format": data["format"],
            "language": data["language"],
            "trials": data["trials"],
            "seed_inputs": bool(data.get("seed_inputs")),
        }
        if data.get("parsed_shapes") is not None:
            grading["shapes"] = data["parsed_shapes"]
        tolerances = self.tolerances(existing)
        if tolerances:
            grading["tolerances"] = tolerances
        timing = {
            name: data[f"timing_{name}"]
            for name in (*TIMING_INTS, *TIMING_FLOATS)
            if data.get(f"timing_{name}") is not None
        }
        if data.get("timing_shape"):
            timing["shape"] = data["timing_shape"]
        if timing:
            grading["timing"] = timing
        if data.get("parsed_limits"):
            grading["limits"] = data["parsed_limits"]
        return grading

    def field_for(self, path: str) -> str | None:
        parts = path.replace("[", ".").split(".")
        if parts[0] != "grading" or len(parts) < 2:
            return None
        head = parts[1]
        if head in ("format", "language", "trials", "seed_inputs", "shapes", "limits"):
            return head
        if head == "tolerances":
            return self.tolerance_field_for(parts)
        if head == "timing" and len(parts) >= 3:
            name = f"timing_{parts[2]}"
            return name if name in self.fields else None
        return None


# -- debugging ---------------------------------------------------------------------------------

GROUP_CHOICES = [
    ("", "not run"),
    ("fail_to_pass", "FAIL_TO_PASS"),
    ("pass_to_pass", "PASS_TO_PASS"),
]


@dataclass(frozen=True)
class TestRow:
    """One test function of the draft's test files, as the tests table shows it."""

    id: str
    visible: bool  # in a test file solvers are shown
    found: bool  # False: named by the table, but no test file defines it (any more)
    group: forms.BoundField
    memory: forms.BoundField


def draft_tests(task: Task, root: str) -> list[tuple[str, bool]]:
    """Every ``test*`` function of the draft's test files under ``root``, as
    (``path::function`` relative to the root, visible), in path and source order. A
    file that does not parse adds none: the bundle check names it on the file."""
    prefix = root.rstrip("/") + "/"
    found: list[tuple[str, bool]] = []
    files = task.files.filter(role=FileRole.TEST, path__startswith=prefix).order_by("path")
    for file in files:
        relative = file.path[len(prefix) :]
        try:
            names = test_functions(file.path, file.content)
        except GradingTableError:
            continue
        visible = file.visibility == Visibility.PROMPT
        found += [(f"{relative}::{name}", visible) for name in names]
    return found


class DebuggingGradingForm(KindGradingForm):
    """The [grading] table of a debugging task: the codebase, what a fix may touch,
    and every test function of the draft's test files, each marked FAIL_TO_PASS,
    PASS_TO_PASS or not run, with an optional memory budget."""

    default_tolerances = DEBUG_TOLERANCES

    root = forms.CharField(
        max_length=200,
        help_text="The folder holding the codebase; test ids and fix paths are relative to it.",
    )
    fix_paths = forms.CharField(
        required=False,
        label="Paths a fix may change",
        help_text="One path or glob per line, relative to the root. Empty: the source files.",
        widget=forms.Textarea(attrs={"rows": 3, "class": "text-input", "spellcheck": "false"}),
    )
    test_timeout_s = forms.FloatField(
        required=False,
        label="Time limit per test (s)",
        help_text="A test still running then is a time_limit_exceeded (default 60).",
        widget=forms.TextInput(attrs={"inputmode": "decimal", "placeholder": "60"}),
    )
    network = forms.ChoiceField(
        choices=[
            ("none", "None: Unix sockets only"),
            ("loopback", "Loopback: TCP on the sandbox's own interface (gloo)"),
        ],
        help_text="Nothing outside the sandbox is reachable either way.",
    )
    limits = limits_field()

    def __init__(self, *args: Any, tests: Sequence[tuple[str, bool]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_tolerance_fields()
        initial = self.initial
        named = [*initial.get("fail_to_pass", []), *initial.get("pass_to_pass", [])]
        known = {test for test, _ in tests}
        # Tests the table names that no file defines stay listed, so that saving
        # never drops one silently; the bundle check names them.
        self.tests: list[tuple[str, bool, bool]] = [(t, v, True) for t, v in tests]
        self.tests += [(t, False, False) for t in named if t not in known]
        for index, (test, _, _) in enumerate(self.tests):
            group = next(
                (g for g in ("fail_to_pass", "pass_to_pass") if test in initial.get(g, [])), ""
            )
            self.fields[f"group_{index}"] = forms.ChoiceField(
                required=False,
                choices=GROUP_CHOICES,
                label=f"Group of {test}",
                initial=group,
                widget=forms.Select(attrs={"aria-label": f"Group of {test}"}),
            )
            budget = f"Memory budget of {test}"
            self.fields[f"memory_{index}"] = forms.FloatField(
                required=False,
                label=budget,
                initial=(initial.get("peak_memory") or {}).get(test),
                widget=forms.TextInput(
                    attrs={"inputmode": "decimal", "placeholder": "none", "aria-label": budget}
                ),
            )

    @classmethod
    def for_task(cls, task: Task, data: Mapping[str, Any] | None) -> KindGradingForm:
        grading = task.grading or {}
        root = grading.get("root")
        tests = draft_tests(task, root if isinstance(root, str) else "repo")
        return cls(data, initial=cls.initial_from(grading), tests=tests)

    @classmethod
    def initial_from(cls, grading: Mapping[str, Any]) -> dict[str, Any]:
        def strings(value: Any) -> list[str]:
            return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

        return {
            "root": grading.get("root", "repo"),
            "fix_paths": "\n".join(strings(grading.get("fix_paths"))),
            "test_timeout_s": grading.get("test_timeout_s"),
            "network": grading.get("network", "none"),
            "limits": cls.toml_initial(grading.get("limits")),
            "fail_to_pass": strings(grading.get("fail_to_pass")),
            "pass_to_pass": strings(grading.get("pass_to_pass")),
            "peak_memory": dict(grading.get("peak_memory") or {}),
            **cls.tolerance_initial(grading),
        }

    def test_rows(self) -> list[TestRow]:
        return [
            TestRow(test, visible, found, self[f"group_{i}"], self[f"memory_{i}"])
            for i, (test, visible, found) in enumerate(self.tests)
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            data["parsed_limits"] = self.toml("limits")
        except ValidationError as exc:
            apply_errors(self, exc)
        return data

    def grading(self, existing: Mapping[str, Any]) -> dict[str, Any]:
        """The [grading] table the valid form describes; tolerances for dtypes the form
        does not show are kept from ``existing``."""
        data = self.cleaned_data
        groups: dict[str, list[str]] = {"fail_to_pass": [], "pass_to_pass": []}
        budgets: dict[str, float] = {}
        for index, (test, _, _) in enumerate(self.tests):
            group = data.get(f"group_{index}") or ""
            if group in groups:
                groups[group].append(test)
                if data.get(f"memory_{index}") is not None:
                    budgets[test] = data[f"memory_{index}"]
        grading: dict[str, Any] = {"root": data["root"].strip(), **groups}
        fix_paths = [line.strip() for line in normalise_newlines(data["fix_paths"]).split("\n")]
        if any(fix_paths):
            grading["fix_paths"] = [path for path in fix_paths if path]
        if data.get("test_timeout_s") is not None:
            grading["test_timeout_s"] = data["test_timeout_s"]
        if data.get("network", "none") != "none":
            grading["network"] = data["network"]
        tolerances = self.tolerances(existing)
        if tolerances:
            grading["tolerances"] = tolerances
        if budgets:
            grading["peak_memory"] = budgets
        if data.get("parsed_limits"):
            grading["limits"] = data["parsed_limits"]
        return grading

    def field_for(self, path: str) -> str | None:
        head, _, rest = path.removeprefix("grading.").partition(".")
        if not path.startswith("grading."):
            return None
        if head in ("root", "fix_paths", "test_timeout_s", "network", "limits"):
            return head
        if head == "tolerances":
            return self.tolerance_field_for(path.split("."))
        if head == "peak_memory":  # grading.peak_memory.<test id>, which holds dots
            for index, (test, _, _) in enumerate(self.tests):
                if rest == test:
                    return f"memory_{index}"
        return None  # the tests' groups: shown above the form, named

    def add_table_error(self, error: GradingTableError) -> None:
        field = self.field_for(error.field)
        group = error.field.removeprefix("grading.")
        if field is None and group in ("fail_to_pass", "pass_to_pass"):
            self.add_error(None, f"{group.upper()}: {error.message}")
            return
        self.add_error(field, error.message)


class TableGradingForm(KindGradingForm):
    """The whole [grading] table as TOML, for a kind whose settings are a nested table
    (a profiling task's fields, traces and key), checked by the kind as it is saved:
    its error names the dotted field, shown above the table."""

    table = forms.CharField(
        required=False,
        strip=False,
        label="[grading] table",
        help_text="TOML, as in task.toml without the [grading] header (docs/bundles.md).",
        widget=toml_widget(24, 'form = "answer"\ntraces = ["traces/rank0.json.gz"]'),
    )

    @classmethod
    def initial_from(cls, grading: Mapping[str, Any]) -> dict[str, Any]:
        return {"table": cls.toml_initial(dict(grading))}

    def grading(self, existing: Mapping[str, Any]) -> dict[str, Any]:
        return self.toml("table")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "table" in cleaned:
            self.toml("table")  # a TOML error is the field's, before the kind sees it
        return cleaned

    def field_for(self, path: str) -> str | None:
        return "table"

    def add_table_error(self, error: GradingTableError) -> None:
        where = f" ({error.file})" if error.file != "task.toml" else ""
        self.add_error("table", f"{error.field}{where}: {error.message}")
