"""HTML pieces of the review screens, rendered on the server: highlighted code,
line diffs and small SVG charts. Every piece of text is escaped (Pygments
escapes the code it highlights; the charts draw only numbers and fixed labels
through ``format_html``)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from .selectors import text_lines

MAX_HIGHLIGHT_CHARS = 400_000
CONTEXT_LINES = 3


def highlighted_lines(path: str, text: str) -> list[SafeString]:
    """One HTML string per line. Pygments closes its spans at each line end, so a
    multi-line string or comment still splits into balanced lines."""
    lines = text_lines(text)
    if len(text) > MAX_HIGHLIGHT_CHARS:
        lexer: Any = TextLexer()
    else:
        try:
            lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=True)
        except ClassNotFound:
            lexer = TextLexer(stripnl=False, ensurenl=True)
    html = highlight("\n".join(lines) + "\n", lexer, HtmlFormatter(nowrap=True))
    rendered = html.split("\n")[: len(lines)]
    rendered += [""] * (len(lines) - len(rendered))
    # Pygments has escaped every character of the source.
    return [mark_safe(line) for line in rendered]  # noqa: S308


@dataclass(frozen=True)
class DiffRow:
    kind: str  # context, add, del, hunk
    text: str
    old_no: int | None = None
    new_no: int | None = None


def diff_rows(old: str, new: str) -> list[DiffRow]:
    """A unified line diff with a few lines of context, as rows for a table."""
    before, after = text_lines(old), text_lines(new)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    rows: list[DiffRow] = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first = group[0]
        rows.append(DiffRow("hunk", f"@@ -{first[1] + 1} +{first[3] + 1} @@"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [
                    DiffRow("context", before[i], i + 1, j1 + (i - i1) + 1) for i in range(i1, i2)
                ]
                continue
            rows += [DiffRow("del", before[i], old_no=i + 1) for i in range(i1, i2)]
            rows += [DiffRow("add", after[j], new_no=j + 1) for j in range(j1, j2)]
    return rows


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def unified_diff_files(text: str) -> list[tuple[str, str, list[DiffRow]]]:
    """A unified diff (as ``git diff`` writes it) as (old path, new path, rows) per
    file, numbered from its hunk headers. Lines outside a file's hunks are skipped."""
    files: list[tuple[str, str, list[DiffRow]]] = []
    old_path = ""
    old_no = new_no = 0
    for line in text.splitlines():
        if line.startswith("--- "):
            old_path = _diff_path(line[4:])
            continue
        if line.startswith("+++ "):
            files.append((old_path, _diff_path(line[4:]), []))
            continue
        if not files:
            continue
        rows = files[-1][2]
        if match := _HUNK.match(line):
            old_no, new_no = int(match[1]), int(match[2])
            rows.append(DiffRow("hunk", line))
        elif line.startswith("+"):
            rows.append(DiffRow("add", line[1:], new_no=new_no))
            new_no += 1
        elif line.startswith("-"):
            rows.append(DiffRow("del", line[1:], old_no=old_no))
            old_no += 1
        elif line.startswith(" ") or line == "":
            rows.append(DiffRow("context", line[1:], old_no, new_no))
            old_no, new_no = old_no + 1, new_no + 1
    return files


def _diff_path(name: str) -> str:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return name
    return name[2:] if name.startswith(("a/", "b/")) else name


def diff_stat(rows: Sequence[DiffRow]) -> tuple[int, int]:
    return sum(r.kind == "add" for r in rows), sum(r.kind == "del" for r in rows)


# Charts ---------------------------------------------------------------------------------------


def _unit(seconds: float) -> tuple[float, str]:
    if seconds >= 1:
        return 1.0, "s"
    if seconds >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def _side(timing: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    side = timing.get(name)
    if not isinstance(side, Mapping) or not isinstance(side.get("median_s"), int | float):
        return None
    return side


def timing_chart(timing: Mapping[str, Any] | None) -> SafeString | None:
    """Reference against submission: median per call (bar), its confidence interval
    (whisker) and each timed batch (dots). None when there is nothing to draw."""
    if not timing:
        return None
    sides = [(label, _side(timing, key)) for label, key in CHART_SIDES]
    present = [(label, side) for label, side in sides if side is not None]
    if not present:
        return None
    top = max(_upper(side) for _, side in present) or 1.0
    scale, unit = _unit(top)
    width, left, bar_h, gap = 560, 96, 22, 18
    usable = width - left - 70
    height = 24 + len(present) * (bar_h + gap)
    parts = [_axis(left, usable, top, scale, unit, height)]
    for index, (label, side) in enumerate(present):
        y = 12 + index * (bar_h + gap)
        parts.append(_bar(label, side, y, left, usable, top, scale, unit, bar_h))
    title = f"Time per call: reference and submission ({unit})"
    return format_html(
        '<svg class="timing-chart" role="img" viewBox="0 0 {} {}" aria-label="{}">'
        "<title>{}</title>{}</svg>",
        width,
        height,
        title,
        title,
        mark_safe("".join(parts)),  # noqa: S308 - each part came from format_html
    )


CHART_SIDES = (("Reference", "reference"), ("Submission", "submission"))


def _upper(side: Mapping[str, Any]) -> float:
    values = [side.get("median_s"), side.get("ci_high_s"), *list(side.get("samples_s") or [])]
    return max(float(v) for v in values if isinstance(v, int | float))


def _f(value: float) -> str:
    """A coordinate. format_html escapes its arguments into strings, so numbers are
    formatted before they go in."""
    return f"{value:.1f}"


def _g(value: float) -> str:
    return f"{value:.3g}"


def _axis(left: int, usable: int, top: float, scale: float, unit: str, height: int) -> str:
    ticks = []
    for i in range(5):
        x = _f(left + usable * i / 4)
        ticks.append(
            format_html(
                '<line x1="{}" y1="4" x2="{}" y2="{}" class="grid"/>'
                '<text x="{}" y="{}" class="tick">{}</text>',
                x,
                x,
                height - 14,
                x,
                height - 2,
                _g(top * scale * i / 4) + (f" {unit}" if i == 4 else ""),
            )
        )
    return "".join(ticks)


def _bar(
    label: str,
    side: Mapping[str, Any],
    y: float,
    left: int,
    usable: int,
    top: float,
    scale: float,
    unit: str,
    bar_h: int,
) -> str:
    median = float(side["median_s"])
    x = lambda seconds: left + usable * float(seconds) / top  # noqa: E731
    label_x = x(_upper(side)) + 6  # right of the bar, its whisker and its dots
    css = "bar-ref" if label == "Reference" else "bar-sub"
    pieces = [
        format_html(
            '<text x="{}" y="{}" class="label">{}</text>'
            '<rect x="{}" y="{}" width="{}" height="{}" class="{}"/>'
            '<text x="{}" y="{}" class="value">{} {}</text>',
            left - 8,
            _f(y + bar_h * 0.7),
            label,
            left,
            _f(y),
            _f(max(x(median) - left, 1.0)),
            bar_h,
            css,
            _f(label_x),
            _f(y + bar_h * 0.7),
            _g(median * scale),
            unit,
        )
    ]
    low, high = side.get("ci_low_s"), side.get("ci_high_s")
    if isinstance(low, int | float) and isinstance(high, int | float):
        pieces.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" class="ci"/>',
                _f(x(low)),
                _f(y + bar_h / 2),
                _f(x(high)),
                _f(y + bar_h / 2),
            )
        )
    samples = [s for s in side.get("samples_s") or [] if isinstance(s, int | float)][:200]
    pieces.append(
        format_html_join(
            "",
            '<circle cx="{}" cy="{}" r="2" class="sample"/>',
            ((_f(x(s)), _f(y + bar_h / 2)) for s in samples),
        )
    )
    return "".join(pieces)


def bar_chart(labels: Sequence[str], values: Sequence[float], *, title: str) -> SafeString:
    """A small column chart (e.g. reviews per day); a line saying so when every value is 0."""
    if not any(values):
        return format_html(
            '<p class="empty chart-empty" role="img" aria-label="{}">No data yet: {}.</p>',
            title,
            title[:1].lower() + title[1:],
        )
    width, height, bottom = 560, 150, 22
    top = max(values, default=0) or 1
    step = (width - 20) / max(len(values), 1)
    columns = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = (height - bottom - 16) * value / top
        x = 10 + i * step
        columns.append(
            format_html(
                '<rect x="{}" y="{}" width="{}" height="{}" class="bar-sub">'
                "<title>{}: {}</title></rect>"
                '<text x="{}" y="{}" class="tick">{}</text>'
                '<text x="{}" y="{}" class="value-small">{}</text>',
                _f(x + step * 0.15),
                _f(height - bottom - h),
                _f(step * 0.7),
                _f(h),
                label,
                _g(value),
                _f(x + step / 2),
                height - 6,
                label[-5:],
                _f(x + step / 2),
                _f(height - bottom - h - 3),
                _g(value) if value else "",
            )
        )
    return format_html(
        '<svg class="bar-chart" role="img" viewBox="0 0 {} {}" aria-label="{}">'
        "<title>{}</title>{}</svg>",
        width,
        height,
        title,
        title,
        mark_safe("".join(columns)),  # noqa: S308 - each column came from format_html
    )
