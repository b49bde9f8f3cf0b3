"""Template settings for tests: a missing variable fails loudly.

Django renders a variable that does not resolve as ``string_if_invalid`` (an
empty string by default), so a template that looks up a key the real data does
not have (``report.hardware.kind`` where reports carry ``host_kind``) renders
blank instead of failing its test. Under ``BENCHWRIGHT_ENV=test`` the project's
own templates raise instead. Django's bundled templates (the admin's) rely on
missing variables rendering empty, so theirs are left alone.
"""

from __future__ import annotations

import sys
from types import FrameType

from django.template import TemplateSyntaxError
from django.template.base import Node


def _rendering_node() -> Node | None:
    """The template node being rendered: the nearest ``self`` up the stack that is one."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Node):
            return candidate
        frame = frame.f_back
    return None


class MissingVariable(str):
    """``string_if_invalid`` whose formatting (Django does ``value % name``) raises."""

    def __mod__(self, name: object) -> str:
        node = _rendering_node()
        origin = getattr(getattr(node, "origin", None), "name", "") or ""
        if "/django/contrib/" in origin or "/django/forms/" in origin:
            return ""
        raise TemplateSyntaxError(f"missing template variable {name!r} in {origin or 'a template'}")
