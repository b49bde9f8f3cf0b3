"""Template helpers of the browser UI: `{% load frontend %}`."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from django import template
from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.utils.safestring import SafeString

from benchwright import roles
from frontend.rendering import render_markdown

register = template.Library()

_LANGUAGES = {
    ".py": "python",
    ".md": "markdown",
    ".toml": "toml",
    ".json": "json",
    ".cu": "cpp",
    ".cuh": "cpp",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".h": "cpp",
    ".hpp": "cpp",
    ".c": "c",
    ".sh": "bash",
    ".yaml": "yaml",
    ".yml": "yaml",
}


@register.filter(name="markdown")
def markdown_filter(text: str) -> SafeString:
    """Author Markdown as sanitised HTML (see frontend.rendering)."""
    return render_markdown(text or "")


@register.filter
def signed(points: int) -> str:
    """``+5`` or minus-sign ``3``: penalties must read as penalties at a glance."""
    return f"+{points}" if points > 0 else f"\N{MINUS SIGN}{abs(points)}"


@register.filter
def code_language(path: str) -> str:
    """The ``language-*`` name for a file, from its extension (``plaintext`` if unknown)."""
    return _LANGUAGES.get(PurePosixPath(path).suffix.lower(), "plaintext")


@register.filter
def rule_summary(rule: dict[str, Any]) -> str:
    """One line for an automatic criterion's rule, e.g. ``verdict is accepted``."""
    if not rule:
        return ""
    kind = rule.get("type", "")
    if kind == "verdict" and "equals" in rule:
        return f"verdict is {rule['equals']}"
    if kind == "speedup" and "at_least" in rule:
        return f"speedup \N{GREATER-THAN OR EQUAL TO} {rule['at_least']}\N{MULTIPLICATION SIGN}"
    if kind == "integrity" and "clean" in rule:
        return "no integrity findings" if rule["clean"] else "integrity findings present"
    details = ", ".join(f"{key}={value}" for key, value in rule.items() if key != "type")
    return f"{kind}: {details}" if details else str(kind)


@register.simple_tag
def role_names(user: AbstractUser | AnonymousUser) -> list[str]:
    """The user's roles in a fixed order; a superuser counts as an admin."""
    if not user.is_authenticated:
        return []
    held = set(user.groups.values_list("name", flat=True))
    if user.is_superuser:
        held.add(roles.ADMIN)
    return [role.replace("_", " ") for role in (*roles.ALL, roles.EXPORTER) if role in held]


@register.filter
def pair(first: Any, second: Any) -> tuple[Any, Any]:
    """``a|pair:b`` -> ``(a, b)``, to loop over two values in a template."""
    return first, second


@register.filter
def number(value: float | None, digits: int = 3) -> str:
    """A measured figure in short form (``1.2e-05``, ``0.731``), or an em dash when absent."""
    if value is None:
        return "\N{EM DASH}"
    return f"{value:.{digits}g}"
