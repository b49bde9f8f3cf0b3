"""Forms of the browser UI. They validate input; access checks stay in the selectors."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.db import connection
from django.db.models import Q, QuerySet

from tasks.models import Hardware, Task, TaskStatus, kind_choices


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
    kind = forms.ChoiceField(required=False, choices=lambda: _with_any(kind_choices(), "Any kind"))
    status = forms.ChoiceField(required=False, choices=_with_any(TaskStatus.choices, "Any status"))
    hardware = forms.ChoiceField(
        required=False, choices=_with_any(Hardware.choices, "Any hardware")
    )
    tag = forms.ChoiceField(required=False, choices=[("", "Any tag")])
    author = forms.ChoiceField(required=False, choices=[("", "Any author")])

    def __init__(
        self,
        *args: object,
        tags: Iterable[str] = (),
        owners: Iterable[tuple[str, str]] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        tag_field = self.fields["tag"]
        assert isinstance(tag_field, forms.ChoiceField)
        tag_field.choices = _with_any(((tag, tag) for tag in tags), "Any tag")
        author_field = self.fields["author"]
        assert isinstance(author_field, forms.ChoiceField)
        author_field.choices = _with_any(owners, "Any author")

    def filter(self, tasks: QuerySet[Task]) -> QuerySet[Task]:
        """Narrow ``tasks`` (already limited to what the user may see) by the valid filters."""
        self.is_valid()  # fills cleaned_data with the fields that are valid
        data = self.cleaned_data
        if query := data.get("q"):
            tasks = tasks.filter(Q(slug__icontains=query) | Q(title__icontains=query))
        for field in ("kind", "status", "hardware"):
            if value := data.get(field):
                tasks = tasks.filter(**{field: value})
        if author := data.get("author"):
            tasks = tasks.filter(owner__username=author)
        if tag := data.get("tag"):
            tasks = _with_tag(tasks, tag)
        return tasks


def _with_tag(tasks: QuerySet[Task], tag: str) -> QuerySet[Task]:
    if connection.features.supports_json_field_contains:
        return tasks.filter(tags__contains=[tag])
    # SQLite (the development default) has no JSON containment lookup.
    ids = [pk for pk, tags in tasks.values_list("pk", "tags") if tag in tags]
    return tasks.filter(pk__in=ids)


def filter_choices(tasks: QuerySet[Task]) -> tuple[list[str], list[tuple[str, str]]]:
    """(every tag used, every owner as (username, name)) over ``tasks``, in one query:
    the choices of the tag and author filters."""
    rows = tasks.order_by().values_list(
        "tags", "owner__username", "owner__first_name", "owner__last_name"
    )
    tags: set[str] = set()
    owners: dict[str, str] = {}
    for task_tags, username, first, last in rows:
        tags.update(task_tags)
        owners[username] = f"{first} {last}".strip() or username
    return sorted(tags), sorted(owners.items(), key=lambda item: item[1].lower())


class DiffForm(forms.Form):
    """Which two versions (or the draft) to compare, and how to show the diff."""

    old = forms.ChoiceField(label="From")
    new = forms.ChoiceField(label="To")
    mode = forms.ChoiceField(
        choices=[("unified", "Unified"), ("split", "Side by side")], required=False
    )

    def __init__(self, *args: object, choices: list[tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for name in ("old", "new"):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices

    @staticmethod
    def default_data(choices: list[tuple[str, str]]) -> dict[str, str] | None:
        """The newest two sources (choices come newest first), or None if fewer exist."""
        if len(choices) < 2:
            return None
        return {"old": choices[1][0], "new": choices[0][0], "mode": "unified"}

    def clean_mode(self) -> str:
        return self.cleaned_data.get("mode") or "unified"
