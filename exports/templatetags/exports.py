"""``{% load exports %}``: whether to show the Exports section to a user."""

from __future__ import annotations

from django import template

from exports.selectors import AnyUser
from exports.selectors import may_export as _may_export

register = template.Library()


@register.filter
def may_export(user: AnyUser) -> bool:
    return _may_export(user)
