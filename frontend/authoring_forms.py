"""Forms of the task editor. They turn browser input into the plain values the
authoring services take; the services check those values with the bundle format's
own rules and raise ValidationErrors that ``apply_errors`` puts next to the fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from graders import registry
from graders.contract import COMMON_RULE_TYPES
from graders.verdicts import NOT_THE_SUBMISSIONS, Verdict
from tasks.models import Difficulty, FileRole, Hardware, ReviewDecision, Visibility, kind_choices

CODE_WIDGET_ATTRS = {"class": "code-input", "spellcheck": "false", "rows": 24}


def normalise_newlines(text: str) -> str:
    """Browsers send textarea content with CRLF line ends; files keep LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def apply_errors(
    form: forms.Form, error: ValidationError, aliases: Mapping[str, str] | None = None
) -> None:
    """Attach a service's ValidationError to the form: each message beside its field
    (renamed through ``aliases``), anything else as a form-wide error."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for field, messages in error.message_dict.items():
        name = (aliases or {}).get(field, field)
        if name in form.fields:
            form.add_error(name, messages)
        else:
            label = "" if field == "__all__" else f"{field}: "
            form.add_error(None, [f"{label}{m}" for m in messages])


def _tags_text(value: Any) -> str:
    return ", ".join(value) if isinstance(value, list | tuple) else str(value or "")


class TagsField(forms.CharField):
    """Comma-separated tags in, a list out."""

    def prepare_value(self, value: Any) -> str:
        return _tags_text(value)

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [tag.strip() for tag in text.split(",") if tag.strip()]


class TaskMetadataForm(forms.Form):
    title = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=kind_choices)
    difficulty = forms.ChoiceField(choices=Difficulty.choices)
    hardware = forms.ChoiceField(choices=Hardware.choices, label="Target hardware")
    tags = TagsField(
        required=False,
        help_text="Comma-separated, e.g. triton, softmax",
        widget=forms.TextInput(attrs={"placeholder": "triton, softmax"}),
    )


class TaskCreateForm(TaskMetadataForm):
    slug = forms.CharField(
        max_length=80,
        help_text="a-z, 0-9 and -, 3 to 80 characters; it never changes",
        widget=forms.TextInput(attrs={"placeholder": "row-softmax", "autocomplete": "off"}),
    )

    field_order = ["slug", "title", "kind", "difficulty", "hardware", "tags"]


class StatementForm(forms.Form):
    statement = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={**CODE_WIDGET_ATTRS, "data-language": "markdown"}),
    )

    def clean_statement(self) -> str:
        return normalise_newlines(self.cleaned_data["statement"])


def _verdict_choices() -> list[tuple[str, str]]:
    return [
        ("", "—"),
        *((value, label) for value, label in Verdict.choices() if value not in NOT_THE_SUBMISSIONS),
    ]


class FileForm(forms.Form):
    """A draft file's content and its place in the bundle."""

    role = forms.ChoiceField(choices=[c for c in FileRole.choices if c[0] != FileRole.STATEMENT])
    visibility = forms.ChoiceField(choices=Visibility.choices)
    expected_verdict = forms.ChoiceField(
        required=False,
        choices=_verdict_choices,
        help_text="Negative examples only: the verdict the grader must give.",
    )
    note = forms.CharField(
        required=False, max_length=2000, help_text="Why it is wrong, or what it is for."
    )
    content = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs=CODE_WIDGET_ATTRS)
    )

    def __init__(self, *args: Any, statement: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statement = statement
        if statement:  # the statement keeps its role and visibility
            for name in ("role", "visibility", "expected_verdict"):
                del self.fields[name]

    def clean_content(self) -> str:
        return normalise_newlines(self.cleaned_data["content"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.statement:
            data.update(role=FileRole.STATEMENT, visibility=Visibility.PROMPT, expected_verdict="")
        elif data.get("role") != FileRole.NEGATIVE:
            data["expected_verdict"] = ""  # a leftover choice from an earlier role
        return data


class NewFileForm(FileForm):
    path = forms.CharField(
        max_length=255,
        help_text="Relative, with / between folders, e.g. bad/no_mask.py",
        widget=forms.TextInput(attrs={"placeholder": "solution.py", "autocomplete": "off"}),
    )
    upload = forms.FileField(
        required=False,
        label="Or upload a file",
        help_text=(
            "UTF-8 text up to 1 MiB, or gzip data under a path ending in .gz,"
            " e.g. a profiler trace (role: artifact)."
        ),
    )

    field_order = ["path", "role", "visibility", "expected_verdict", "note", "content", "upload"]


class RenameForm(forms.Form):
    path = forms.CharField(max_length=255, label="New path")


# -- rubric ----------------------------------------------------------------------------------

# Short labels of the rule types whose parameters the form has fields for; any other
# type a kind offers is shown by its description and takes no parameters here.
RULE_LABELS = {
    "verdict": "Verdict is",
    "speedup": "Speedup at least",
    "integrity": "Integrity findings",
}


def rule_type_choices(kind: str) -> list[tuple[str, str]]:
    """The automatic rule types a task of ``kind`` may use (its kind's, through the
    registry; the common ones for a kind with no grader)."""
    types = registry.get(kind).rule_types() if registry.is_kind(kind) else COMMON_RULE_TYPES
    return [(t.name, RULE_LABELS.get(t.name, t.description)) for t in types]


class CriterionForm(forms.Form):
    """One rubric criterion: an automatic rule or a human criterion with levels."""

    key = forms.CharField(
        max_length=60,
        label="Id",
        help_text="Stable across versions: a-z, 0-9, '.', '_', '-'.",
        widget=forms.TextInput(attrs={"placeholder": "correct", "autocomplete": "off"}),
    )
    title = forms.CharField(max_length=200)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "class": "text-input"})
    )
    points = forms.IntegerField(help_text="Signed: a negative number is a penalty.")
    kind = forms.ChoiceField(
        choices=[("automatic", "Automatic rule"), ("human", "Human judgement")],
        widget=forms.RadioSelect,
        initial="automatic",
    )
    rule_type = forms.ChoiceField(required=False, label="Rule")
    rule_verdict = forms.ChoiceField(
        required=False, choices=_verdict_choices, label="Verdict", initial="accepted"
    )
    rule_speedup = forms.FloatField(
        required=False,
        label="Speedup (times)",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    rule_clean = forms.ChoiceField(
        required=False,
        label="Holds when",
        choices=[("true", "there are none"), ("false", "there are some (a penalty)")],
    )
    levels = forms.CharField(
        required=False,
        help_text="One level per line: score: descriptor, e.g. 2: Clear at a glance.",
        widget=forms.Textarea(attrs={"rows": 4, "class": "text-input"}),
    )

    ERROR_ALIASES = {"id": "key", "rule": "rule_type"}

    def __init__(self, *args: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["rule_type"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = rule_type_choices(kind)

    @classmethod
    def initial_from(cls, criterion: Any) -> dict[str, Any]:
        rule = criterion.rule or {}
        initial: dict[str, Any] = {
            "key": criterion.key,
            "title": criterion.title,
            "description": criterion.description,
            "points": criterion.points,
            "kind": criterion.kind,
            "rule_type": rule.get("type", "verdict"),
            "rule_verdict": rule.get("equals", "accepted"),
            "rule_speedup": rule.get("at_least"),
            "rule_clean": "true" if rule.get("clean", True) else "false",
            "levels": "\n".join(
                f"{level.get('score')}: {level.get('descriptor', '')}"
                for level in criterion.levels or []
            ),
        }
        return initial

    def clean_levels(self) -> list[dict[str, Any]]:
        levels: list[dict[str, Any]] = []
        for number, line in enumerate(normalise_newlines(self.cleaned_data["levels"]).split("\n")):
            if not line.strip():
                continue
            score_text, sep, descriptor = line.partition(":")
            try:
                score = float(score_text)
            except ValueError:
                score = None
            if not sep or score is None:
                raise ValidationError(f"line {number + 1}: write score: descriptor")
            levels.append(
                {
                    "score": int(score) if score.is_integer() else score,
                    "descriptor": descriptor.strip(),
                }
            )
        return levels

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("kind") == "automatic":
            data["rule"] = self._rule(data)
        return data

    def _rule(self, data: dict[str, Any]) -> dict[str, Any]:
        kind = data.get("rule_type") or "verdict"
        if kind == "verdict":
            return {"type": "verdict", "equals": data.get("rule_verdict") or "accepted"}
        if kind == "speedup":
            if data.get("rule_speedup") is None:
                self.add_error("rule_speedup", "give the speedup the rule wants")
                return {"type": "speedup"}
            return {"type": "speedup", "at_least": data["rule_speedup"]}
        if kind == "integrity":
            return {"type": "integrity", "clean": data.get("rule_clean", "true") == "true"}
        return {"type": kind}  # a kind's own rule with no parameters the form knows

    def service_values(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "key": data["key"],
            "title": data["title"],
            "description": data.get("description", ""),
            "points": data["points"],
            "kind": data["kind"],
            "rule": data.get("rule"),
            "levels": data.get("levels"),
        }


# -- zip import, diffs, review -----------------------------------------------------------------


class BundleUploadForm(forms.Form):
    bundle = forms.FileField(
        label="Bundle (.zip)",
        help_text="A zip of a bundle folder: task.toml and the files it lists.",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
    )


class ReviewCommentForm(forms.Form):
    path = forms.CharField(max_length=255, widget=forms.HiddenInput)
    line = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    body = forms.CharField(
        max_length=5000,
        label="Comment",
        widget=forms.Textarea(attrs={"rows": 3, "class": "text-input"}),
    )


class ReviewDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=ReviewDecision.choices)
    comment = forms.CharField(
        required=False,
        max_length=20000,
        label="Overall comment",
        widget=forms.Textarea(attrs={"rows": 4, "class": "text-input"}),
    )
