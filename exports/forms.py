"""The browser's definition form: plain fields in, ``Spec`` data out. The spec
decides what is valid; its errors are shown under the fields they concern."""

from __future__ import annotations

from typing import Any

from django import forms

from tasks.models import Difficulty, Hardware, kind_choices

from .models import DefinitionVersion, ExportFormat
from .spec import (
    DEFAULT_OPTIONS,
    DEFAULT_SPLIT,
    LIST_FILTERS,
    REVIEW_DECISIONS,
    VERDICTS,
    Spec,
    SpecError,
)

CHECKBOXES = forms.CheckboxSelectMultiple
TEXT_LISTS = ("tags", "tasks", "models", "task_versions")


def _multiple(choices: Any, label: str) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=choices, required=False, widget=CHECKBOXES, label=label, help_text="None: all."
    )


class DefinitionForm(forms.Form):
    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    format = forms.ChoiceField(choices=ExportFormat.choices)
    kinds = _multiple(kind_choices, "Task kinds")
    difficulties = _multiple(Difficulty.choices, "Difficulties")
    hardware = _multiple(Hardware.choices, "Target hardware")
    verdicts = _multiple([(v, v.replace("_", " ")) for v in VERDICTS], "Verdicts")
    review_decisions = _multiple(
        [(v, v.replace("_", " ")) for v in REVIEW_DECISIONS], "Review decisions"
    )
    tags = forms.CharField(required=False, help_text="Comma-separated; a task needs all of them.")
    tasks = forms.CharField(required=False, label="Task slugs", help_text="Comma-separated.")
    task_versions = forms.CharField(
        required=False, label="Task version ids", help_text="Comma-separated."
    )
    models = forms.CharField(required=False, help_text="Comma-separated model names.")
    score_min = forms.FloatField(required=False, min_value=0, max_value=1, label="Least score")
    score_max = forms.FloatField(required=False, min_value=0, max_value=1, label="Most score")
    created_after = forms.DateTimeField(required=False, help_text="Submitted at or after (UTC).")
    created_before = forms.DateTimeField(required=False, help_text="Submitted before (UTC).")
    train = forms.FloatField(min_value=0, max_value=1, initial=DEFAULT_SPLIT["train"])
    validation = forms.FloatField(min_value=0, max_value=1, initial=DEFAULT_SPLIT["validation"])
    test = forms.FloatField(min_value=0, max_value=1, initial=DEFAULT_SPLIT["test"])
    seed = forms.IntegerField(min_value=0, initial=0, help_text="Same seed, same splits.")
    include_submitter = forms.BooleanField(
        required=False,
        help_text="Submitter, run id and labels; written only when an admin builds it.",
    )
    margin = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=DEFAULT_OPTIONS["margin"],
        help_text="Preference: least score difference of a score pair.",
    )
    pairs_per_submission = forms.IntegerField(
        min_value=0, max_value=20, initial=DEFAULT_OPTIONS["pairs_per_submission"]
    )
    include_explanations = forms.BooleanField(
        required=False,
        initial=DEFAULT_OPTIONS["include_explanations"],
        help_text="SFT: put a reviewer-approved explanation before the solution.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            self.spec = Spec.parse(self.spec_data(cleaned))
        except SpecError as exc:
            for key, messages in exc.errors.items():
                field = key.rsplit(".", 1)[-1] if key else None
                field = field if field in self.fields else None
                for message in messages:
                    self.add_error(field, message)
        return cleaned

    @staticmethod
    def spec_data(cleaned: dict[str, Any]) -> dict[str, Any]:
        filters: dict[str, Any] = {}
        for name in LIST_FILTERS:
            value = cleaned.get(name)
            if name in TEXT_LISTS:
                value = [item.strip() for item in (value or "").split(",") if item.strip()]
                if name == "task_versions":
                    value = [int(v) if v.isdigit() else v for v in value]
            filters[name] = list(value or [])
        for name in ("score_min", "score_max"):
            filters[name] = cleaned.get(name)
        for name in ("created_after", "created_before"):
            value = cleaned.get(name)
            filters[name] = value.isoformat() if value else None
        return {
            "title": cleaned["title"],
            "description": cleaned.get("description", ""),
            "format": cleaned["format"],
            "filters": filters,
            "split": {name: cleaned[name] for name in ("train", "validation", "test")},
            "seed": cleaned["seed"],
            "include_submitter": bool(cleaned.get("include_submitter")),
            "options": {
                "margin": cleaned["margin"],
                "pairs_per_submission": cleaned["pairs_per_submission"],
                "include_explanations": bool(cleaned.get("include_explanations")),
            },
        }


class NewDefinitionForm(DefinitionForm):
    slug = forms.SlugField(max_length=80, label="Name", help_text="Used by the CLI and the API.")
    field_order = ["slug"]


def initial_from(version: DefinitionVersion) -> dict[str, Any]:
    """A version's content as the form's initial values."""
    filters = dict(version.filters)
    initial: dict[str, Any] = {
        "title": version.title,
        "description": version.description,
        "format": version.format,
        "seed": version.seed,
        "include_submitter": version.include_submitter,
        **{name: version.split.get(name, 0.0) for name in ("train", "validation", "test")},
        **{name: version.options.get(name, DEFAULT_OPTIONS[name]) for name in DEFAULT_OPTIONS},
    }
    for name in LIST_FILTERS:
        values = filters.get(name, [])
        initial[name] = ", ".join(map(str, values)) if name in TEXT_LISTS else values
    for name in ("score_min", "score_max", "created_after", "created_before"):
        initial[name] = filters.get(name)
    return initial
