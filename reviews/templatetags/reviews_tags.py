"""Template helpers of the review screens: ``{% load reviews_tags %}``."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def percent(value: float | None) -> str:
    """``0.734`` -> ``73%``; an em dash when not defined."""
    return "\N{EM DASH}" if value is None else f"{value:.0%}"


@register.filter
def figure(value: float | None, digits: int = 3) -> str:
    """An agreement figure or score in short form; an em dash when not defined."""
    if value is None:
        return "\N{EM DASH}"
    return f"{value:.{digits}f}"


@register.filter
def points(value: float | None) -> str:
    """Points as awarded (``2``, ``1.5``; a true minus sign on penalties); a dash if unscored."""
    if value is None:
        return "\N{EM DASH}"
    text = f"{abs(value):g}"
    return f"\N{MINUS SIGN}{text}" if value < 0 else text


@register.filter
def level_score(level: dict[str, Any]) -> str:
    """A level's score as the form posts it (``2``, ``0.5``)."""
    return f"{float(level['score']):g}"


@register.filter
def seconds(value: float | None) -> str:
    """A duration per call with a readable unit."""
    if value is None:
        return "\N{EM DASH}"
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} \N{MICRO SIGN}s"


@register.filter
def item_label(review: Any) -> str:
    """Reviewers of one submission appear as Reviewer 1, 2, … (by slot), never by name."""
    return f"Reviewer {review.assignment.slot}"
