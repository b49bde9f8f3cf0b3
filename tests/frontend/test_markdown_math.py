"""TeX in statements: kept away from Markdown on the server, typeset in the browser."""

from __future__ import annotations

from pathlib import Path

from frontend.rendering import render_markdown

CATALOG = Path(__file__).resolve().parents[2] / "reference_solutions"


def test_a_catalog_formula_reaches_the_page_as_written() -> None:
    html = render_markdown((CATALOG / "cpu-masked-mean-pool" / "statement.md").read_text())
    # Markdown would have eaten the underscores (emphasis) and the backslash spacing.
    assert '<div class="arithmatex">\\[' in html
    assert r"\text{mask}_{b,t}\, x_{b,t,h}" in html
    assert "<em>" not in html.split('<div class="arithmatex">')[1].split("</div>")[0]


def test_inline_math_and_dollars_that_are_money() -> None:
    html = render_markdown("Rows $x_i * w_j$ cost $5 and $6 each.")
    assert r'<span class="arithmatex">\(x_i * w_j\)</span>' in html
    assert "cost $5 and $6 each" in html


def test_only_the_math_class_survives_on_spans_and_divs() -> None:
    html = render_markdown(
        '<span class="badge badge-published">Published</span> '
        '<div class="arithmatex button">x</div> <span onclick="alert(1)">y</span>'
    )
    assert "badge" not in html and "button" not in html and "onclick" not in html
    assert '<div class="arithmatex">x</div>' in html
