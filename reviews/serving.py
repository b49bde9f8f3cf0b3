"""A serving grading as the review and submission pages show it: both sides' figures
(the median of their runs), the rate search's points, and SVG charts of them.

It reads the public report (``ServingKind.public_details``): the reference side
carries figures only, never its flags. Every number is checked for type before it is
drawn, and every piece of text goes through ``format_html``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from graders.reports import report_number

ROLES = ("reference", "submission")
# (figure in each run, heading): the table's columns, medians over a side's runs.
RUN_FIGURES = (
    ("request_goodput", "Goodput (req/s)"),
    ("request_throughput", "Throughput (req/s)"),
    ("p90_ttft_ms", "p90 TTFT (ms)"),
    ("p90_tpot_ms", "p90 TPOT (ms)"),
    ("p99_e2el_ms", "p99 E2EL (ms)"),
)
WIDTH, LEFT, RIGHT, TOP, BOTTOM = 560, 48, 16, 12, 34


@dataclass(frozen=True)
class SideRow:
    role: str
    runs: int
    attainment: float | None  # median over its runs (max_rate: at the rates it sustained)
    figures: list[float | None]  # RUN_FIGURES, in order
    max_rate: float | None
    error: str


@dataclass(frozen=True)
class PointCell:
    attainment: float
    goodput: float
    sustained: bool


@dataclass(frozen=True)
class PointRow:
    rate: float
    cells: list[PointCell | None]  # reference, submission


@dataclass(frozen=True)
class ServingView:
    objective: str
    score_name: str  # goodput | rate
    ratio: float | None
    interval: tuple[float, float] | None
    significant: bool
    wanted: float | None  # the share of requests that must meet every SLO
    slo: dict[str, float]
    sides: list[SideRow]
    points: list[PointRow]
    config_errors: list[str]
    charts: list[tuple[str, SafeString]] = field(default_factory=list)  # (caption, SVG)
    headings: tuple[str, ...] = tuple(heading for _, heading in RUN_FIGURES)


def is_serving_report(report: Mapping[str, Any] | None) -> bool:
    if not report:
        return False
    return isinstance(report.get("semantics"), Mapping) and "objective" in report


def serving_view(report: Mapping[str, Any] | None) -> ServingView | None:
    """The view of a serving report, or None for any other kind's: a public report
    (the serving figures at its top level) or a reviewer's (under ``serving``)."""
    if report is not None and isinstance(report.get("serving"), Mapping):
        report = report["serving"]
    if report is None or not is_serving_report(report):
        return None
    objective = "max_rate" if report.get("objective") == "max_rate" else "goodput"
    name = "rate" if objective == "max_rate" else "goodput"
    sides = {role: _mapping(report.get(role)) for role in ROLES}
    slo = {
        key: float(value)
        for key, value in _mapping(report.get("slo")).items()
        if _number(value) is not None
    }
    view = ServingView(
        objective=objective,
        score_name=name,
        ratio=report_number(report, f"{name}_ratio"),
        interval=_pair(report.get(f"{name}_ratio_ci")),
        significant=report.get("significant") is True,
        wanted=slo.get("attainment"),
        slo={key: value for key, value in slo.items() if key != "attainment"},
        sides=[_side_row(role, sides[role]) for role in ROLES],
        points=_point_rows(sides),
        config_errors=[str(e) for e in report.get("config_errors") or [] if isinstance(e, str)],
    )
    view.charts.extend(_charts(view, sides))
    return view


# -- reading the report ----------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pair(value: Any) -> tuple[float, float] | None:
    """An interval; an upper end stored as null is unbounded (the submission sustained
    every rate of the ladder: reports store infinity as null)."""
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = _number(value[0]), _number(value[1])
        if low is not None:
            return (low, math.inf if high is None else high)
    return None


def _runs(side: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    runs = side.get("runs")
    return [run for run in runs if isinstance(run, Mapping)] if isinstance(runs, list) else []


def _median(values: Iterable[float | None]) -> float | None:
    numbers = sorted(v for v in values if v is not None)
    if not numbers:
        return None
    middle = len(numbers) // 2
    return numbers[middle] if len(numbers) % 2 else (numbers[middle - 1] + numbers[middle]) / 2


def _side_row(role: str, side: Mapping[str, Any]) -> SideRow:
    points = _points(side)
    runs = _runs(side)
    if points:
        # A rate search: the figures at the highest rate the side sustained.
        sustained = [p for p in points if p["sustained"]]
        rate = (sustained or points)[-1]["rate"]
        runs = [run for run in runs if _number(run.get("rate")) == rate]
    return SideRow(
        role=role,
        runs=len(_runs(side)),
        attainment=_median(_number(run.get("attainment")) for run in runs),
        figures=[
            _median(_number(_mapping(run.get("figures")).get(key)) for run in runs)
            for key, _ in RUN_FIGURES
        ],
        max_rate=_number(side.get("max_rate")),
        error=str(side.get("error") or ""),
    )


def _points(side: Mapping[str, Any]) -> list[dict[str, Any]]:
    points = side.get("points")
    if not isinstance(points, list):
        return []
    found = []
    for point in points:
        point = _mapping(point)
        rate, attainment = _number(point.get("rate")), _number(point.get("attainment"))
        if rate is None or attainment is None:
            continue
        goodput = _number(point.get("goodput")) or 0.0
        found.append(
            {
                "rate": rate,
                "attainment": attainment,
                "goodput": goodput,
                "sustained": point.get("sustained") is True,
            }
        )
    return found


def _point_rows(sides: Mapping[str, Mapping[str, Any]]) -> list[PointRow]:
    by_role = {role: {p["rate"]: p for p in _points(sides[role])} for role in ROLES}
    rates = sorted({rate for points in by_role.values() for rate in points})
    return [
        PointRow(
            rate,
            [
                PointCell(p["attainment"], p["goodput"], p["sustained"])
                if (p := by_role[role].get(rate))
                else None
                for role in ROLES
            ],
        )
        for rate in rates
    ]


# -- charts ----------------------------------------------------------------------------


def _charts(
    view: ServingView, sides: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, SafeString]]:
    if view.points:
        series = {role: _points(sides[role]) for role in ROLES}
        share = "Share of requests meeting every SLO, against request rate"
        goodput = "Goodput (requests/s meeting every SLO), against request rate"
        return [
            (share, _rate_chart(series, "attainment", share, top=1.0, wanted=view.wanted)),
            (goodput, _rate_chart(series, "goodput", goodput, top=None, wanted=None)),
        ]
    runs = {
        role: [_number(_mapping(run.get("figures")).get("request_goodput")) for run in _runs(side)]
        for role, side in sides.items()
    }
    if not any(v is not None for values in runs.values() for v in values):
        return []
    title = "Goodput of each measured run (requests/s)"
    return [(title, _runs_chart(runs, title))]


def _svg(css: str, height: int, title: str, parts: Sequence[str]) -> SafeString:
    return format_html(
        '<svg class="{}" role="img" viewBox="0 0 {} {}" aria-label="{}"><title>{}</title>{}</svg>',
        css,
        WIDTH,
        height,
        title,
        title,
        mark_safe("".join(parts)),  # noqa: S308 - each part came from format_html
    )


def _f(value: float) -> str:
    return f"{value:.1f}"


def _g(value: float) -> str:
    return f"{value:.3g}"


def _rate_chart(
    series: Mapping[str, list[dict[str, Any]]],
    key: str,
    title: str,
    *,
    top: float | None,
    wanted: float | None,
) -> SafeString:
    """One line per side over the rates it was measured at: filled dots where it
    sustained the rate, hollow where it did not; a dashed line at the wanted share."""
    height = 200
    percent = key == "attainment"
    all_points = [p for points in series.values() for p in points]
    x_top = max(p["rate"] for p in all_points) or 1.0
    y_top = top or max((p[key] for p in all_points), default=0.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - TOP - BOTTOM

    def x(rate: float) -> float:
        return LEFT + plot_w * rate / x_top

    def y(value: float) -> float:
        return TOP + plot_h * (1 - min(value, y_top) / y_top)

    parts: list[str] = []
    for i in range(5):
        value = y_top * i / 4
        parts.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" class="grid"/>'
                '<text x="{}" y="{}" class="tick tick-y">{}</text>',
                LEFT,
                _f(y(value)),
                WIDTH - RIGHT,
                _f(y(value)),
                LEFT - 4,
                _f(y(value) + 3),
                f"{value:.0%}" if percent else _g(value),
            )
        )
    rates = sorted({p["rate"] for p in all_points})
    parts.append(
        format_html_join(
            "",
            '<text x="{}" y="{}" class="tick">{}</text>',
            ((_f(x(rate)), height - BOTTOM + 14, _g(rate)) for rate in rates),
        )
    )
    parts.append(
        format_html(
            '<text x="{}" y="{}" class="tick">requests/s</text>', _f(LEFT + plot_w / 2), height - 2
        )
    )
    if wanted is not None:
        parts.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" class="wanted"/>'
                '<text x="{}" y="{}" class="tick tick-y">wanted</text>',
                LEFT,
                _f(y(wanted)),
                WIDTH - RIGHT,
                _f(y(wanted)),
                WIDTH - RIGHT,
                _f(y(wanted) - 3),
            )
        )
    for role, points in series.items():
        if not points:
            continue
        css = "line-ref" if role == "reference" else "line-sub"
        path = " ".join(f"{_f(x(p['rate']))},{_f(y(p[key]))}" for p in points)
        parts.append(format_html('<polyline points="{}" class="{}"/>', path, css))
        parts.append(
            format_html_join(
                "",
                '<circle cx="{}" cy="{}" r="3.5" class="{} {}"><title>{} at {}/s: {}</title>'
                "</circle>",
                (
                    (
                        _f(x(p["rate"])),
                        _f(y(p[key])),
                        css,
                        "sustained" if p["sustained"] else "missed",
                        role,
                        _g(p["rate"]),
                        f"{p[key]:.0%}" if percent else _g(p[key]),
                    )
                    for p in points
                ),
            )
        )
    parts.append(_legend(height))
    return _svg("serving-chart", height, title, parts)


def _legend(height: int) -> str:
    return format_html(
        '<rect x="{}" y="{}" width="10" height="3" class="bar-ref"/>'
        '<text x="{}" y="{}" class="tick legend">reference</text>'
        '<rect x="{}" y="{}" width="10" height="3" class="bar-sub"/>'
        '<text x="{}" y="{}" class="tick legend">submission</text>',
        LEFT,
        height - 8,
        LEFT + 14,
        height - 5,
        LEFT + 90,
        height - 8,
        LEFT + 104,
        height - 5,
    )


def _runs_chart(runs: Mapping[str, list[float | None]], title: str) -> SafeString:
    """Goodput per run, reference and submission: a bar at each side's median, a dot
    per run."""
    height, bar_h, gap = 100, 22, 14
    top = max((v for values in runs.values() for v in values if v is not None), default=0.0)
    top = top or 1.0
    plot_w = WIDTH - LEFT - RIGHT - 40

    def x(value: float) -> float:
        return LEFT + 40 + plot_w * value / top

    parts: list[str] = []
    for index, role in enumerate(ROLES):
        values = [v for v in runs.get(role, []) if v is not None]
        y = TOP + index * (bar_h + gap)
        median = _median(values)
        css = "bar-ref" if role == "reference" else "bar-sub"
        parts.append(
            format_html(
                '<text x="{}" y="{}" class="label">{}</text>',
                LEFT + 34,
                _f(y + bar_h * 0.7),
                role,
            )
        )
        if median is not None:
            parts.append(
                format_html(
                    '<rect x="{}" y="{}" width="{}" height="{}" class="{}"/>'
                    '<text x="{}" y="{}" class="value">{} req/s</text>',
                    LEFT + 40,
                    _f(y),
                    _f(max(x(median) - LEFT - 40, 1.0)),
                    bar_h,
                    css,
                    _f(x(max(values)) + 6),
                    _f(y + bar_h * 0.7),
                    _g(median),
                )
            )
        parts.append(
            format_html_join(
                "",
                '<circle cx="{}" cy="{}" r="2.5" class="sample"/>',
                ((_f(x(v)), _f(y + bar_h / 2)) for v in values),
            )
        )
    return _svg("serving-chart", height, title, parts)
