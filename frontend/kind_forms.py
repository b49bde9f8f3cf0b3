"""Which grading form a task kind's grading page shows: by the name a kind gives in its
``authoring_form`` (``graders.contract.TaskKind``), with the template that shows it."""

from __future__ import annotations

from graders import registry

from .grading_forms import DebuggingGradingForm, GradingForm, KindGradingForm, TableGradingForm
from .serving_forms import ServingGradingForm


def grading_forms() -> dict[str, tuple[type[KindGradingForm], str]]:
    """The grading forms of the kinds that have one, by the name a kind gives in its
    ``authoring_form`` (graders.contract.TaskKind), with the template that shows it."""
    return {
        "kernel": (GradingForm, "frontend/edit/grading.html"),
        "debugging": (DebuggingGradingForm, "frontend/edit/grading_debugging.html"),
        "table": (TableGradingForm, "frontend/edit/grading_table.html"),
        "serving": (ServingGradingForm, "frontend/edit/grading_serving.html"),
    }


def grading_form_for(kind: str) -> tuple[type[KindGradingForm], str] | None:
    """The grading form and template of a task kind, through the registry; None when the
    kind has no grader or its grader has no form."""
    if not registry.is_kind(kind):
        return None
    name = registry.get(kind).authoring_form
    return grading_forms().get(name) if name else None


def grading_form_missing(kind: str) -> str:
    """What the grading page says for a kind without a form."""
    if not registry.is_kind(kind):
        return f"{kind.capitalize()} tasks have no grader yet, so there is nothing to set here."
    label = registry.get(kind).label
    return (
        f"{label} tasks have no grading form here yet: set their [grading] table in a "
        "bundle and import it (see docs/bundles.md)."
    )
