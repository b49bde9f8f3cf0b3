"""The grading tab of a serving task: the workload, the SLOs, the objective, the model
and the engine flags a solver may set, field by field; and the reference config's
editor beside it.

The form turns the fields into the ``[grading]`` table that docs/bundles.md
describes ("Serving bundles"); ranges and rules stay the kind's
(``graders.serving.spec``), which checks the table as the view saves it. An empty
field leaves its key out, so that the kind's default applies and a bundle's table
round-trips without growing keys its author never wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from graders.contract import GradingTableError
from graders.serving.flags import normalise
from graders.serving.spec import ARRIVALS, DATASETS, ENGINES, OBJECTIVES
from graders.serving.tinymodel import Recipe
from tasks.models import Task

from .authoring_forms import CODE_WIDGET_ATTRS, apply_errors, normalise_newlines
from .grading_forms import KindGradingForm, toml_widget

# Blank flag rows under the allowed ones: room for new flags without JavaScript.
BLANK_FLAG_ROWS = 3
RECIPE_FIELDS = tuple(f.name for f in fields(Recipe))


def _number(label: str, placeholder: Any = "", *, whole: bool = False, **kwargs: Any) -> Any:
    widget = forms.TextInput(attrs={"inputmode": "numeric" if whole else "decimal"})
    if placeholder != "":
        widget.attrs["placeholder"] = str(placeholder)
    field_class = forms.IntegerField if whole else forms.FloatField
    return field_class(required=False, label=label, widget=widget, **kwargs)


@dataclass(frozen=True)
class FlagRow:
    """One flag a solver may set, as the flags table shows it."""

    name: forms.BoundField
    low: forms.BoundField
    high: forms.BoundField
    quality: forms.BoundField


# The workload's fields: (key, label, placeholder (the kind's default), whole number).
WORKLOAD_NUMBERS: tuple[tuple[str, str, Any, bool], ...] = (
    ("input_len", "Input tokens", 128, True),
    ("output_len", "Output tokens", 32, True),
    ("range_ratio", "Range ratio", 0, False),
    ("prefix_len", "Shared prefix tokens", 256, True),
    ("prefixes", "Distinct prefixes", 4, True),
    ("burstiness", "Burstiness", 1, False),
    ("rate", "Rate (requests/s)", "", False),
    ("requests", "Requests per run", 60, True),
    ("warmup", "Warm-up requests", 4, True),
    ("seed", "Seed", 0, True),
)
# Shown only for the dataset or arrival process they belong to.
WORKLOAD_SHOWN_WHEN = {
    "range_ratio": "workload_dataset=random",
    "prefix_len": "workload_dataset=prefix",
    "prefixes": "workload_dataset=prefix",
    "lengths": "workload_dataset=lengths",
    "burstiness": "workload_arrival=gamma",
}
SLO_NUMBERS = (
    ("ttft_ms", "TTFT (ms)"),
    ("tpot_ms", "TPOT (ms)"),
    ("e2el_ms", "End-to-end latency (ms)"),
)
ENGINE_NUMBERS: tuple[tuple[str, str, Any, bool], ...] = (
    ("kv_cache_gib", "KV cache (GiB)", 1, False),
    ("runs", "Runs per side", 3, True),
    ("startup_timeout_s", "Engine start limit (s)", 300, False),
)


class ServingGradingForm(KindGradingForm):
    """The [grading] table of a serving task (docs/bundles.md, "Serving bundles")."""

    # The engine this platform runs, at its pinned version: not a choice of the task's.
    engine_text = ", ".join(f"{name} {version}" for name, version in ENGINES.items())

    submission = forms.CharField(
        max_length=100,
        label="Solver's file",
        help_text="The file a submission holds its engine flags in, as a TOML table.",
    )
    reference = forms.CharField(
        max_length=200,
        label="Reference config",
        help_text="The bundle path of the author's config (hidden), edited below.",
    )
    model_path = forms.CharField(
        required=False,
        max_length=500,
        label="Model path (GPU tasks)",
        help_text="An absolute path on the GPU pool. Empty: a tiny model built from the recipe.",
    )
    workload_dataset = forms.ChoiceField(
        label="Dataset",
        choices=[(d, d) for d in DATASETS],
        help_text="random lengths, a length-distribution file, or shared-prefix groups.",
    )
    workload_lengths = forms.CharField(
        required=False,
        max_length=200,
        label="Lengths file",
        help_text='A .jsonl file of the bundle: one {"input": n, "output": m} per line.',
    )
    workload_arrival = forms.ChoiceField(
        label="Arrivals", choices=[(a, a) for a in ARRIVALS], help_text="gamma: set burstiness."
    )
    workload_ignore_eos = forms.BooleanField(
        required=False, label="Ignore EOS", help_text="Every request decodes its output length."
    )
    slo_attainment = _number(
        "Attainment", 0.9, help_text="The share of requests that must meet every SLO."
    )
    objective_kind = forms.ChoiceField(
        label="Objective",
        choices=[(o, o) for o in OBJECTIVES],
        help_text="goodput at the workload's rate, or the highest rate within the SLOs.",
    )
    objective_rates = forms.CharField(
        required=False,
        label="Rates tried",
        help_text="Request rates, increasing, comma-separated (max_rate).",
        widget=forms.TextInput(attrs={"placeholder": "4, 6, 8, 12"}),
    )
    fixed = forms.CharField(
        required=False,
        strip=False,
        label="Fixed engine flags",
        help_text="Flags every engine of this task gets, solvers' and reference's alike (TOML).",
        widget=toml_widget(3, 'dtype = "bfloat16"\nenforce_eager = true'),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, label, placeholder, whole in ENGINE_NUMBERS:
            self.fields[key] = _number(label, placeholder, whole=whole)
        defaults = Recipe()
        for key in RECIPE_FIELDS:
            self.fields[f"tiny_{key}"] = _number(key, getattr(defaults, key), whole=True)
        for key, label, placeholder, whole in WORKLOAD_NUMBERS:
            self.fields[f"workload_{key}"] = _number(label, placeholder, whole=whole)
        self.fields["workload_rate"].required = True
        for key, label in SLO_NUMBERS:
            self.fields[f"slo_{key}"] = _number(label, "none")
        allowed = self.initial.get("allowed_rows", [])
        self.flag_count = len(allowed) + BLANK_FLAG_ROWS
        if self.is_bound:  # rows as posted: as many as the page had
            posted = [key for key in self.data if key.startswith("flag_") and key.endswith("_name")]
            self.flag_count = max(self.flag_count, len(posted))
        for index in range(self.flag_count):
            row = allowed[index] if index < len(allowed) else {}
            self.fields[f"flag_{index}_name"] = forms.CharField(
                required=False,
                max_length=64,
                initial=row.get("name", ""),
                widget=forms.TextInput(
                    attrs={**CODE_WIDGET_ATTRS, "aria-label": f"Flag {index + 1}"}
                ),
            )
            for bound in ("low", "high"):
                self.fields[f"flag_{index}_{bound}"] = forms.FloatField(
                    required=False,
                    initial=row.get(bound),
                    widget=forms.TextInput(
                        attrs={"inputmode": "decimal", "aria-label": f"Flag {index + 1} {bound}"}
                    ),
                )
            self.fields[f"flag_{index}_quality"] = forms.BooleanField(
                required=False,
                initial=row.get("quality", False),
                widget=forms.CheckboxInput(attrs={"aria-label": f"Flag {index + 1} quality"}),
            )

    @classmethod
    def page_context(cls, request: HttpRequest, task: Task) -> dict[str, Any]:
        """The reference config's editor, beside the settings it is checked against."""
        return reference_context(request, task)

    # -- the table into fields ---------------------------------------------------------

    @classmethod
    def initial_from(cls, grading: Mapping[str, Any]) -> dict[str, Any]:
        def table(key: str) -> Mapping[str, Any]:
            value = grading.get(key)
            return value if isinstance(value, Mapping) else {}

        workload, slo, model = table("workload"), table("slo"), table("model")
        objective, ranges = table("objective"), table("ranges")
        tiny = model["tiny"] if isinstance(model.get("tiny"), Mapping) else {}
        initial: dict[str, Any] = {
            "submission": grading.get("submission", "engine.toml"),
            "reference": grading.get("reference", "reference/engine.toml"),
            "model_path": model.get("path", ""),
            "workload_dataset": workload.get("dataset", "random"),
            "workload_lengths": workload.get("lengths", ""),
            "workload_arrival": workload.get("arrival", "poisson"),
            "workload_ignore_eos": workload.get("ignore_eos", True),
            "objective_kind": objective.get("kind", "goodput"),
            "objective_rates": ", ".join(f"{r:g}" for r in objective.get("rates") or []),
            "fixed": cls.toml_initial(table("fixed")),
        }
        initial |= {key: grading.get(key) for key, *_ in ENGINE_NUMBERS}
        initial |= {f"tiny_{key}": tiny.get(key) for key in RECIPE_FIELDS}
        initial |= {f"workload_{key}": workload.get(key) for key, *_ in WORKLOAD_NUMBERS}
        initial |= {f"slo_{key}": slo.get(key) for key, _ in (*SLO_NUMBERS, ("attainment", ""))}
        quality = {normalise(str(q)) for q in grading.get("quality") or []}
        rows = []
        for name in grading.get("allowed") or []:
            bounds = ranges.get(name) or ranges.get(name.replace("_", "-")) or [None, None]
            low, high = [*list(bounds), None, None][:2]
            rows.append(
                {"name": name, "low": low, "high": high, "quality": normalise(name) in quality}
            )
        initial["allowed_rows"] = rows
        return initial

    def flag_rows(self) -> list[FlagRow]:
        return [
            FlagRow(*(self[f"flag_{i}_{part}"] for part in ("name", "low", "high", "quality")))
            for i in range(self.flag_count)
        ]

    def engine_fields(self) -> list[forms.BoundField]:
        return [self[key] for key, *_ in ENGINE_NUMBERS]

    def recipe_fields(self) -> list[forms.BoundField]:
        return [self[f"tiny_{key}"] for key in RECIPE_FIELDS]

    def workload_fields(self) -> list[tuple[forms.BoundField, str]]:
        """The workload's number fields and the lengths file, each with the condition
        it is shown under ('' for always)."""
        keys = [key for key, *_ in WORKLOAD_NUMBERS]
        keys.insert(keys.index("burstiness"), "lengths")
        return [(self[f"workload_{key}"], WORKLOAD_SHOWN_WHEN.get(key, "")) for key in keys]

    def slo_fields(self) -> list[forms.BoundField]:
        return [self[f"slo_{key}"] for key, _ in SLO_NUMBERS] + [self["slo_attainment"]]

    # -- fields into the table ---------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            data["parsed_fixed"] = self.toml("fixed")
            data["parsed_rates"] = self._rates(data.get("objective_rates") or "")
        except ValidationError as exc:
            apply_errors(self, exc)
        return data

    @staticmethod
    def _rates(text: str) -> list[float | int]:
        rates: list[float | int] = []
        for part in text.replace(";", ",").split(","):
            if not part.strip():
                continue
            try:
                value = float(part)
            except ValueError:
                raise ValidationError(
                    {"objective_rates": [f"{part.strip()!r} is not a number"]}
                ) from None
            rates.append(int(value) if value.is_integer() else value)
        return rates

    def grading(self, existing: Mapping[str, Any]) -> dict[str, Any]:
        """The [grading] table the valid form describes; the engine and its version are
        kept from ``existing`` (this platform runs one)."""
        data = self.cleaned_data

        def present(prefix: str, keys: Any) -> dict[str, Any]:
            return {
                key: _plain(data[f"{prefix}{key}"])
                for key in keys
                if data.get(f"{prefix}{key}") is not None
            }

        grading: dict[str, Any] = {
            key: existing[key] for key in ("engine", "engine_version") if key in existing
        }
        grading["submission"] = data["submission"].strip()
        grading["reference"] = data["reference"].strip()
        allowed, quality, ranges = self._flags()
        grading["allowed"] = allowed
        if quality:
            grading["quality"] = quality
        if data.get("parsed_fixed"):
            grading["fixed"] = data["parsed_fixed"]
        grading |= present("", [key for key, *_ in ENGINE_NUMBERS])
        if ranges:
            grading["ranges"] = ranges
        path = (data.get("model_path") or "").strip()
        grading["model"] = {"path": path} if path else {"tiny": present("tiny_", RECIPE_FIELDS)}
        workload: dict[str, Any] = {"dataset": data["workload_dataset"]}
        if data["workload_dataset"] == "lengths":
            workload["lengths"] = (data.get("workload_lengths") or "").strip()
        if data["workload_arrival"] != "poisson":
            workload["arrival"] = data["workload_arrival"]
        workload |= present("workload_", [key for key, *_ in WORKLOAD_NUMBERS])
        if not data.get("workload_ignore_eos"):
            workload["ignore_eos"] = False
        grading["workload"] = workload
        grading["slo"] = present("slo_", [key for key, _ in (*SLO_NUMBERS, ("attainment", ""))])
        objective: dict[str, Any] = {"kind": data["objective_kind"]}
        if data["objective_kind"] == "max_rate" or data.get("parsed_rates"):
            objective["rates"] = data.get("parsed_rates") or []
        grading["objective"] = objective
        return grading

    def _flags(self) -> tuple[list[str], list[str], dict[str, list[Any]]]:
        data = self.cleaned_data
        allowed: list[str] = []
        quality: list[str] = []
        ranges: dict[str, list[Any]] = {}
        for index in range(self.flag_count):
            name = normalise(data.get(f"flag_{index}_name") or "")
            if not name:
                continue
            allowed.append(name)
            if data.get(f"flag_{index}_quality"):
                quality.append(name)
            low, high = data.get(f"flag_{index}_low"), data.get(f"flag_{index}_high")
            if low is not None or high is not None:
                ranges[name] = [_plain(low), _plain(high)]
        return allowed, quality, ranges

    # -- the kind's errors beside their fields -------------------------------------------

    def field_for(self, path: str) -> str | None:
        parts = path.split(".")
        if parts[0] != "grading" or len(parts) < 2:
            return None
        head, rest = parts[1], parts[2:]
        if head in ("submission", "reference", "fixed", *[k for k, *_ in ENGINE_NUMBERS]):
            return head
        if head == "model":
            if rest[:1] == ["path"]:
                return "model_path"
            if rest[:1] == ["tiny"] and len(rest) > 1 and f"tiny_{rest[1]}" in self.fields:
                return f"tiny_{rest[1]}"
            return None
        if head in ("workload", "slo", "objective") and rest:
            name = f"{head}_{rest[0]}"
            return name if name in self.fields else None
        if head == "ranges" and rest:
            return self._flag_field(rest[0], "low")
        return None

    def _flag_field(self, flag: str, part: str) -> str | None:
        for index in range(self.flag_count):
            if normalise(self.data.get(f"flag_{index}_name", "") or "") == normalise(flag):
                return f"flag_{index}_{part}"
        return None

    def add_table_error(self, error: GradingTableError) -> None:
        field = self.field_for(error.field)
        if field is None:
            where = error.field.removeprefix("grading.")
            if error.file != "task.toml":
                where = f"{error.file}: {where}"
            self.add_error(None, f"{where}: {error.message}")
            return
        self.add_error(field, error.message)


def _plain(value: Any) -> Any:
    """A whole float as an int: the table reads as an author writes it (rate = 4)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class ReferenceConfigForm(forms.Form):
    """The reference config's text, checked before it is saved."""

    content = forms.CharField(
        required=False,
        strip=False,
        label="Engine flags",
        help_text="A TOML table of vLLM engine arguments, as a solver's file holds them.",
        widget=toml_widget(8, "max_num_seqs = 8\nmax_num_batched_tokens = 2048"),
    )

    def clean_content(self) -> str:
        return normalise_newlines(self.cleaned_data.get("content") or "")


def check_session_key(task: Task) -> str:
    """Where the author's session keeps the id of vLLM's check of the reference."""
    return f"serving-config-check:{task.pk}"


def reference_path(task: Task) -> str:
    path = (task.grading or {}).get("reference")
    return path if isinstance(path, str) and path else "reference/engine.toml"


def reference_context(
    request: HttpRequest, task: Task, form: ReferenceConfigForm | None = None
) -> dict[str, Any]:
    """The reference card's context: its form (filled from the draft's file) and whether a
    check of vLLM's is waiting to be shown."""
    path = reference_path(task)
    file = task.files.filter(path=path).first()
    if form is None:
        form = ReferenceConfigForm(initial={"content": file.content if file else ""})
    return {
        "reference_form": form,
        "reference_path": path,
        "reference_exists": file is not None,
        "reference_checking": check_session_key(task) in request.session,
    }
