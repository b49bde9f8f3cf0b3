"""Forms of the browser UI. They validate input; access checks stay in the selectors."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.db import connection
from django.db.models import Q, QuerySet

from tasks.models import Hardware, Kind, Task, TaskStatus


def _with_any(choices: Iterable[tuple[str, str]], label: str) -> list[tuple[str, str]]:
    return [("", label), *choices]


class TaskFilterForm(forms.Form):
    """The task list's GET filters. Invalid values are ignored rather than reported:
    a stale bookmark should still show a list."""

    q = forms.CharField(
        required=False,
        max_length=100,
        label="Search",
        widget=forms.SearchInput(attrs={"placeholder": "Slug or title"}),
    )
    kind = forms.ChoiceField(required=False, choices=_with_any(Kind.choices, "Any kind"))
    status = forms.ChoiceField(required=False, choices=_with_any(TaskStatus.choices, "Any status"))
    hardware = forms.ChoiceField(
        required=False, choices=_with_any(Hardware.choices, "Any hardware")
    )
    tag = forms.ChoiceField(required=False, choices=[("", "Any tag")])

    def __init__(self, *args: object, tags: Iterable[str] = (), **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        tag_field = self.fields["tag"]
        assert isinstance(tag_field, forms.ChoiceField)
        tag_field.choices = _with_any(((tag, tag) for tag in tags), "Any tag")

    def filter(self, tasks: QuerySet[Task]) -> QuerySet[Task]:
        """Narrow ``tasks`` (already limited to what the user may see) by the valid filters."""
        self.is_valid()  # fills cleaned_data with the fields that are valid
        data = self.cleaned_data
        if query := data.get("q"):
            tasks = tasks.filter(Q(slug__icontains=query) | Q(title__icontains=query))
        for field in ("kind", "status", "hardware"):
            if value := data.get(field):
                tasks = tasks.filter(**{field: value})
        if tag := data.get("tag"):
            tasks = _with_tag(tasks, tag)
        return tasks


def _with_tag(tasks: QuerySet[Task], tag: str) -> QuerySet[Task]:
    if connection.features.supports_json_field_contains:
        return tasks.filter(tags__contains=[tag])
    # SQLite (the development default) has no JSON containment lookup.
    ids = [pk for pk, tags in tasks.values_list("pk", "tags") if tag in tags]
    return tasks.filter(pk__in=ids)


def tags_of(tasks: QuerySet[Task]) -> list[str]:
    """Every tag used by ``tasks``, sorted: the choices of the tag filter."""
    return sorted({tag for tags in tasks.values_list("tags", flat=True) for tag in tags})
