"""Inline SVG charts for ``report.html``: pass-rate bars per model and a capability radar.

Hand-written SVG keeps the report a single self-contained file with no plotting library and
no JavaScript. Coordinates are printed with fixed precision, so the output is deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from pytest_vlcheck import fmt
from pytest_vlcheck.report.matrix import Matrix, Row
from pytest_vlcheck.results import MEASURED, CapabilityResult

__all__ = [
    "MODEL_COLOURS",
    "STATUS_COLOURS",
    "RadarAxis",
    "bar_chart",
    "line_chart",
    "model_colour",
    "pooled_rate",
    "radar_axes",
    "radar_chart",
]

# Okabe-Ito colours (distinguishable with the common colour-vision deficiencies).
MODEL_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
STATUS_COLOURS = {
    "passed": "#4c9a58",
    "failed": "#d1495b",
    "error": "#e08a1e",
    "skipped": "#9aa0a6",
    "xfailed": "#d1495b",
    "xpassed": "#4c9a58",
}
MAX_RADAR_AXES = 16
MIN_RADAR_AXES = 3

_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def model_colour(index: int) -> str:
    """The colour of the ``index``-th model, shared by the radar and the page legend."""
    return MODEL_COLOURS[index % len(MODEL_COLOURS)]


def _n(x: float) -> str:
    """A coordinate: one decimal, no ``-0.0``."""
    text = f"{x:.1f}"
    return "0.0" if text == "-0.0" else text


def _clamp(x: float | None) -> float:
    return 0.0 if x is None else min(1.0, max(0.0, float(x)))


def _scored(result: CapabilityResult | None) -> bool:
    return (
        result is not None
        and result.status in MEASURED
        and result.pass_rate is not None
        and result.n > 0
    )


# --- bar chart -----------------------------------------------------------------------------

_BAR_WIDTH = 760
_BAR_LABEL = 250
_BAR_RIGHT = 100
_BAR_TOP = 24
_ROW = 22
_BAR = 12
_CHAR_WIDTH = 6.2
"""An 11-px system-ui character's width, generously: what a label column needs per character."""


def _bar_label_width(rows: list[Row]) -> float:
    """The label column: wide enough for the longest row label (never truncated), at least
    ``_BAR_LABEL``."""
    longest = max((len(row.label) for row in rows), default=0)
    return max(_BAR_LABEL, 16 + _CHAR_WIDTH * longest)


def _bar_row(
    row: Row, result: CapabilityResult | None, y0: float, plot: float, label: float
) -> list[str]:
    def x(v: float | None) -> str:
        return _n(label + _clamp(v) * plot)

    cy = y0 + _ROW / 2
    out = [
        f'<text x="{_n(label - 8)}" y="{_n(cy + 4)}" text-anchor="end">{escape(row.label)}</text>'
    ]
    if result is None or not _scored(result):
        status = "not run" if result is None else result.status
        out.append(f'<text x="{label + 4}" y="{_n(cy + 4)}" fill="#6b7280">{escape(status)}</text>')
        return [f"<g><title>{escape(row.label)}: {escape(status)}</title>", *out, "</g>"]
    rate, low, high = result.pass_rate, result.ci_low, result.ci_high
    colour = STATUS_COLOURS[result.status]
    tip = (
        f"{row.label}: {fmt.pct(rate)} (95% CI {fmt.ci(low, high)}), "
        f"threshold {fmt.pct(result.threshold)}, n={result.n}"
    )
    out.append(
        f'<rect x="{label}" y="{_n(cy - _BAR / 2)}" width="{_n(_clamp(rate) * plot)}" '
        f'height="{_BAR}" fill="{colour}"/>'
    )
    if low is not None and high is not None:
        out.append(
            f'<path d="M{x(low)} {_n(cy)}H{x(high)}M{x(low)} {_n(cy - 4)}V{_n(cy + 4)}'
            f'M{x(high)} {_n(cy - 4)}V{_n(cy + 4)}" stroke="#1f2937" fill="none"/>'
        )
    if result.chance is not None:
        out.append(
            f'<line x1="{x(result.chance)}" y1="{_n(y0 + 2)}" x2="{x(result.chance)}" '
            f'y2="{_n(y0 + _ROW - 2)}" stroke="#6b7280" stroke-dasharray="2 2"/>'
        )
    if result.threshold is not None:
        out.append(
            f'<line x1="{x(result.threshold)}" y1="{_n(y0 + 1)}" '
            f'x2="{x(result.threshold)}" y2="{_n(y0 + _ROW - 1)}" stroke="#111827" '
            'stroke-width="2"/>'
        )
    mark = "✓" if result.status in ("passed", "xpassed") else "✗"
    out.append(f'<text x="{label + plot + 8}" y="{_n(cy + 4)}">{fmt.pct(rate)} {mark}</text>')
    return [f"<g><title>{escape(tip)}</title>", *out, "</g>"]


def _bar_legend(y: float, x: float) -> list[str]:
    items = [
        f'<rect x="{x}" y="{_n(y - 9)}" width="12" height="10" fill="{STATUS_COLOURS["passed"]}"/>',
        f'<text x="{x + 16}" y="{_n(y)}">passed</text>',
        f'<rect x="{x + 70}" y="{_n(y - 9)}" width="12" height="10" '
        f'fill="{STATUS_COLOURS["failed"]}"/>',
        f'<text x="{x + 86}" y="{_n(y)}">failed</text>',
        f'<path d="M{x + 140} {_n(y - 4)}H{x + 160}M{x + 140} {_n(y - 8)}V{_n(y)}'
        f'M{x + 160} {_n(y - 8)}V{_n(y)}" stroke="#1f2937" fill="none"/>',
        f'<text x="{x + 166}" y="{_n(y)}">95% CI</text>',
        f'<line x1="{x + 222}" y1="{_n(y - 10)}" x2="{x + 222}" y2="{_n(y + 2)}" '
        'stroke="#111827" stroke-width="2"/>',
        f'<text x="{x + 228}" y="{_n(y)}">threshold</text>',
        f'<line x1="{x + 294}" y1="{_n(y - 10)}" x2="{x + 294}" y2="{_n(y + 2)}" '
        'stroke="#6b7280" stroke-dasharray="2 2"/>',
        f'<text x="{x + 300}" y="{_n(y)}">chance</text>',
    ]
    return items


def bar_chart(matrix: Matrix, model: str) -> str:
    """Horizontal pass-rate bars of one model, one per matrix row, with CI whiskers,
    threshold marks (solid) and chance marks (dotted)."""
    rows = matrix.rows
    label = _bar_label_width(rows)
    plot = _BAR_WIDTH - _BAR_LABEL - _BAR_RIGHT
    width = _n(label + plot + _BAR_RIGHT)
    body_bottom = _BAR_TOP + len(rows) * _ROW
    height = body_bottom + 36
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" {_FONT} '
        f'fill="#111827"><title>{escape(model)}: pass rate per test</title>'
    ]
    for tick in range(0, 101, 25):
        x = _n(label + tick / 100 * plot)
        out.append(
            f'<line x1="{x}" y1="{_BAR_TOP}" x2="{x}" y2="{body_bottom}" stroke="#e5e7eb"/>'
            f'<text x="{x}" y="{_BAR_TOP - 8}" text-anchor="middle" fill="#6b7280">{tick}%</text>'
        )
    for i, row in enumerate(rows):
        out.extend(_bar_row(row, row.cells.get(model), _BAR_TOP + i * _ROW, plot, label))
    out.extend(_bar_legend(body_bottom + 24, label))
    out.append("</svg>")
    return "\n".join(out)


# --- radar chart ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RadarAxis:
    """One spoke of the radar: a capability (or capability prefix) and the rows under it."""

    label: str
    rows: list[Row]


def radar_axes(matrix: Matrix, max_axes: int = MAX_RADAR_AXES) -> list[RadarAxis]:
    """Spokes in first-seen order: one per capability, merged to shorter taxonomy prefixes
    (``relation/spatial/left`` -> ``relation/spatial``) while there are more than ``max_axes``."""
    depth = max((len(r.capability.split("/")) for r in matrix.rows), default=1)
    while True:
        groups: dict[str, list[Row]] = {}
        for row in matrix.rows:
            prefix = "/".join(row.capability.split("/")[:depth])
            groups.setdefault(prefix, []).append(row)
        if len(groups) <= max_axes or depth == 1:
            return [RadarAxis(label, rows) for label, rows in groups.items()]
        depth -= 1


def pooled_rate(rows: list[Row], model: str) -> tuple[float, int, int] | None:
    """Examples passed over examples scored, pooled across the scored tests of one axis."""
    passed = n = 0
    for row in rows:
        result = row.cells.get(model)
        if result is not None and _scored(result):
            passed += result.passed
            n += result.n
    return (passed / n, passed, n) if n else None


def _mean_threshold(rows: list[Row]) -> float | None:
    values = [t for t in (row.shared("threshold") for row in rows) if t is not None]
    return sum(values) / len(values) if values else None


_RADAR_WIDTH = 800
_RADAR_CX = 420
_RADAR_SCALE_X = 34
_RADAR_CY = 230
_RADAR_R = 170
_RADAR_LABEL_CHARS = 26


def _point(k: int, count: int, v: float) -> tuple[float, float]:
    angle = -math.pi / 2 + 2 * math.pi * k / count
    r = _RADAR_R * _clamp(v)
    return _RADAR_CX + r * math.cos(angle), _RADAR_CY + r * math.sin(angle)


def _points(pts: list[tuple[float, float]]) -> str:
    return " ".join(f"{_n(x)},{_n(y)}" for x, y in pts)


def _shape(pts: list[tuple[float, float]], attrs: str) -> str:
    if len(pts) >= 3:
        return f'<polygon points="{_points(pts)}" {attrs}/>'
    if len(pts) == 2:
        return f'<polyline points="{_points(pts)}" {attrs}/>'
    return ""


def _axis_label(k: int, count: int, label: str) -> str:
    angle = -math.pi / 2 + 2 * math.pi * k / count
    cos, sin = math.cos(angle), math.sin(angle)
    x = _RADAR_CX + (_RADAR_R + 14) * cos
    y = _RADAR_CY + (_RADAR_R + 14) * sin + 4 + (6 if sin > 0.3 else -2 if sin < -0.3 else 0)
    anchor = "middle" if abs(cos) < 0.3 else "start" if cos > 0 else "end"
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"><title>{escape(label)}</title>'
        f"{escape(fmt.truncate(label, _RADAR_LABEL_CHARS))}</text>"
    )


def _ring_scale() -> list[str]:
    """The rings' values on a ruler left of the radar, level with where each ring meets the
    upward spoke: outside the plot, so no model polygon ever covers a label."""
    x = _RADAR_SCALE_X
    out = [
        f'<line x1="{x}" y1="{_RADAR_CY}" x2="{x}" y2="{_RADAR_CY - _RADAR_R}" stroke="#9ca3af"/>'
    ]
    for ring in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = _n(_RADAR_CY - _RADAR_R * ring)
        out.append(
            f'<line x1="{x - 4}" y1="{y}" x2="{x}" y2="{y}" stroke="#9ca3af"/>'
            f'<text x="{x + 4}" y="{_n(_RADAR_CY - _RADAR_R * ring + 4)}" fill="#6b7280">'
            f"{int(ring * 100)}%</text>"
        )
    return out


def radar_chart(matrix: Matrix) -> str | None:
    """One radar over the capability axes with a polygon per model (pooled pass rates) and the
    mean threshold dashed; None when there are fewer than three axes."""
    axes = radar_axes(matrix)
    count = len(axes)
    if count < MIN_RADAR_AXES:
        return None
    names = matrix.model_names
    height = _RADAR_CY + _RADAR_R + 50 + 18 * (len(names) + 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{_RADAR_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_RADAR_WIDTH} {height}" role="img" {_FONT} '
        'fill="#111827"><title>Pass rate per capability</title>'
    ]
    for ring in (0.25, 0.5, 0.75, 1.0):
        ring_pts = [_point(k, count, ring) for k in range(count)]
        out.append(f'<polygon points="{_points(ring_pts)}" fill="none" stroke="#e5e7eb"/>')
    out.extend(_ring_scale())
    for k, axis in enumerate(axes):
        x, y = _point(k, count, 1.0)
        out.append(
            f'<line x1="{_RADAR_CX}" y1="{_RADAR_CY}" x2="{_n(x)}" y2="{_n(y)}" stroke="#e5e7eb"/>'
        )
        out.append(_axis_label(k, count, axis.label))
    threshold_pts = [
        _point(k, count, t)
        for k, axis in enumerate(axes)
        if (t := _mean_threshold(axis.rows)) is not None
    ]
    out.append(_shape(threshold_pts, 'fill="none" stroke="#111827" stroke-dasharray="4 3"'))
    for m, name in enumerate(names):
        colour = model_colour(m)
        pts, marks = [], []
        for k, axis in enumerate(axes):
            pooled = pooled_rate(axis.rows, name)
            if pooled is None:
                continue
            rate, passed, n = pooled
            x, y = _point(k, count, rate)
            pts.append((x, y))
            marks.append(
                f'<circle cx="{_n(x)}" cy="{_n(y)}" r="3" fill="{colour}"><title>'
                f"{escape(name)}, {escape(axis.label)}: {fmt.pct(rate)} ({passed}/{n})"
                "</title></circle>"
            )
        out.append(
            _shape(pts, f'fill="{colour}" fill-opacity="0.12" stroke="{colour}" stroke-width="2"')
        )
        out.extend(marks)
    y = _RADAR_CY + _RADAR_R + 50
    for m, name in enumerate(names):
        out.append(
            f'<rect x="20" y="{y - 9}" width="12" height="10" fill="{model_colour(m)}"/>'
            f'<text x="38" y="{y}">{escape(name)}</text>'
        )
        y += 18
    out.append(
        f'<line x1="20" y1="{y - 4}" x2="32" y2="{y - 4}" stroke="#111827" '
        'stroke-dasharray="4 3"/>'
        f'<text x="38" y="{y}">mean threshold</text>'
    )
    out.append("</svg>")
    return "\n".join(s for s in out if s)


# --- line chart ----------------------------------------------------------------------------

_LINE_WIDTH = 760
_LINE_LEFT = 48
_LINE_RIGHT = 24
_LINE_TOP = 20
_LINE_PLOT_HEIGHT = 240
_LINE_X_LABEL_CHARS = 18


def capability_curves(matrix: Matrix, names: list[str]) -> list[tuple[str, list[float | None]]]:
    """Per capability, its pooled pass rate (examples passed / scored) along the models
    ``names`` (runs compared, checkpoints of one glob): what ``line_chart`` draws."""
    by_capability: dict[str, list[Row]] = {}
    for row in matrix.rows:
        by_capability.setdefault(row.capability, []).append(row)
    curves = []
    for capability, rows in by_capability.items():
        pooled = [pooled_rate(rows, name) for name in names]
        curves.append((capability, [None if p is None else p[0] for p in pooled]))
    return curves


def capability_thresholds(matrix: Matrix) -> dict[str, float]:
    """Per capability, the mean threshold of its tests (each test's, when the models agree)."""
    by_capability: dict[str, list[float]] = {}
    for row in matrix.rows:
        threshold = row.shared("threshold")
        if isinstance(threshold, (int, float)):
            by_capability.setdefault(row.capability, []).append(float(threshold))
    return {c: sum(values) / len(values) for c, values in by_capability.items()}


def curve_panels(matrix: Matrix, names: list[str], title: str) -> list[tuple[str, str]]:
    """Capability curves as small multiples, ``(group, svg)`` each: one chart per capability
    group (the name's first segment: attribute, object, relation, ...) with each capability's
    threshold drawn in its colour, so a dozen curves stay apart."""
    thresholds = capability_thresholds(matrix)
    groups: dict[str, list[tuple[str, list[float | None]]]] = {}
    for capability, values in capability_curves(matrix, names):
        groups.setdefault(capability.split("/")[0], []).append((capability, values))
    return [
        (group, line_chart(names, series, f"{title}: {group}", thresholds))
        for group, series in groups.items()
    ]


def line_chart(
    x_labels: list[str],
    series: list[tuple[str, list[float | None]]],
    title: str,
    thresholds: dict[str, float] | None = None,
) -> str:
    """Pass rates (0-1) along ``x_labels`` (runs, checkpoints), one line per named series.

    A None value breaks nothing: the series' line joins the points it has, and the point's
    tooltip carries the exact rate. A series with a threshold gets it as a dashed line of its
    colour. Series beyond the palette's colours are dashed. The legend lists the series below
    the plot.
    """
    thresholds = thresholds or {}
    plot_w = _LINE_WIDTH - _LINE_LEFT - _LINE_RIGHT
    bottom = _LINE_TOP + _LINE_PLOT_HEIGHT
    height = bottom + 40 + 18 * len(series)
    step = plot_w / max(1, len(x_labels) - 1)

    def xy(k: int, v: float) -> tuple[float, float]:
        return _LINE_LEFT + k * step, bottom - _clamp(v) * _LINE_PLOT_HEIGHT

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart" width="{_LINE_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_LINE_WIDTH} {height}" role="img" {_FONT} '
        f'fill="#111827"><title>{escape(title)}</title>'
    ]
    for tick in range(0, 101, 25):
        _, y = xy(0, tick / 100)
        out.append(
            f'<line x1="{_LINE_LEFT}" y1="{_n(y)}" x2="{_LINE_LEFT + plot_w}" y2="{_n(y)}" '
            f'stroke="#e5e7eb"/><text x="{_LINE_LEFT - 6}" y="{_n(y + 4)}" text-anchor="end" '
            f'fill="#6b7280">{tick}%</text>'
        )
    last = len(x_labels) - 1
    for k, label in enumerate(x_labels):
        x, _ = xy(k, 0.0)
        # the end labels lie inside the plot's width, not across the picture's edge
        anchor = "start" if k == 0 and last else "end" if k == last and last else "middle"
        out.append(
            f'<text x="{_n(x)}" y="{bottom + 16}" text-anchor="{anchor}"><title>{escape(label)}'
            f"</title>{escape(fmt.truncate(label, _LINE_X_LABEL_CHARS))}</text>"
        )
    for s, (name, values) in enumerate(series):
        colour = model_colour(s)
        dash = "" if s < len(MODEL_COLOURS) else ' stroke-dasharray="8 3"'
        pts = [(k, v) for k, v in enumerate(values) if v is not None]
        coords = [xy(k, v) for k, v in pts]
        if name in thresholds:
            _, ty = xy(0, thresholds[name])
            out.append(
                f'<line x1="{_LINE_LEFT}" y1="{_n(ty)}" x2="{_LINE_LEFT + plot_w}" y2="{_n(ty)}" '
                f'stroke="{colour}" stroke-width="1" stroke-dasharray="2 3"><title>'
                f"{escape(name)} threshold {fmt.pct(thresholds[name])}</title></line>"
            )
        if len(coords) >= 2:
            out.append(
                f'<polyline points="{_points(coords)}" fill="none" stroke="{colour}" '
                f'stroke-width="2"{dash}/>'
            )
        for (k, v), (x, y) in zip(pts, coords, strict=True):
            out.append(
                f'<circle cx="{_n(x)}" cy="{_n(y)}" r="3" fill="{colour}"><title>'
                f"{escape(name)}, {escape(x_labels[k])}: {fmt.pct(v)}</title></circle>"
            )
        y = bottom + 40 + 18 * s
        limit = f" (threshold {fmt.pct(thresholds[name])}, dotted)" if name in thresholds else ""
        out.append(
            f'<line x1="{_LINE_LEFT}" y1="{y - 4}" x2="{_LINE_LEFT + 14}" y2="{y - 4}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{_LINE_LEFT + 20}" y="{y}">{escape(name)}{escape(limit)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
