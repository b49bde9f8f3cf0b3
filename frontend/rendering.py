r"""Markdown written by task authors, turned into HTML that is safe to show to anyone.

Statements are authored text, and an author's account can be compromised, so the
HTML is sanitised with an allow-list after Markdown has produced it: Markdown
passes raw HTML through untouched, so sanitising the input would not be enough.

TeX between ``$…$`` or ``$$…$$`` (and ``\(…\)``, ``\[…\]``) is kept away from
Markdown (``pymdownx.arithmatex``: underscores and asterisks in a formula stay
as written) and left as text in ``<span class="arithmatex">`` or
``<div class="arithmatex">``, which the browser typesets with KaTeX
(``frontend/src/math.js``); without JavaScript the TeX shows as it is.
"""

from __future__ import annotations

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "dl", "dt",
        "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre",
        "s", "samp", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th",
        "thead", "tr", "ul", "var", "div", "span",
    }
)  # fmt: skip
# No images: an external image would make every reader's browser call another server.
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "code": {"class"},
    "div": {"class"},
    "span": {"class"},
    "td": {"align"},
    "th": {"align"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
_CODE_CLASS_PREFIX = "language-"
MATH_CLASS = "arithmatex"


def _keep_language_classes(tag: str, attribute: str, value: str) -> str | None:
    """Fenced code blocks carry ``class="language-x"`` and formulas ``class="arithmatex"``;
    any other class could borrow the page's own styles (a fake status badge, a fake
    button), so it is dropped."""
    if attribute != "class":
        return value
    if tag in ("span", "div"):
        return MATH_CLASS if MATH_CLASS in value.split() else None
    kept = [name for name in value.split() if name.startswith(_CODE_CLASS_PREFIX)]
    return " ".join(kept) or None


def render_markdown(text: str) -> SafeString:
    html = markdown.markdown(
        text,
        extensions=["fenced_code", "tables", "pymdownx.arithmatex"],
        extension_configs={
            # An align attribute rather than inline style: style attributes stay banned.
            "tables": {"use_align_attribute": True},
            # Plain text between \( \) or \[ \]: no MathJax script tags, no preview.
            "pymdownx.arithmatex": {"generic": True},
        },
        output_format="html",
    )
    cleaned = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        attribute_filter=_keep_language_classes,
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 - nh3 has just sanitised it against the allow-list
