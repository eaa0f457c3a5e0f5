"""The capability matrix as a compact fixed-width table for the pytest terminal summary.

A formatter over ``sections.Report``. Cells carry a colour name (a significant drop red, a
significant gain green) that the plugin hands to pytest's terminal writer; ``format_matrix``
gives the plain lines. The table tries to fit ``width``: first it drops the ``(n=...)`` part
of the cells, then it truncates the row labels, then the model headers.
"""

from __future__ import annotations

from pytest_vlcheck import fmt
from pytest_vlcheck.report.sections import Cell, Report
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.blocks import GateComparison, GateWarning

__all__ = [
    "UNSCORED_MARK",
    "cell_text",
    "format_matrix",
    "mark_legend",
    "matrix_lines",
    "plain_table",
    "verdict_mark",
]

_GAP = "  "
_MIN_LABEL = 12
_MIN_HEADER = 5
_LABEL_HEADER = "capability"
_THRESHOLD_HEADER = "threshold"
MARKS = {"passed": "✓", "failed": "✗", "xfailed": "✗", "xpassed": "✓"}
UNSCORED_MARK = "*"
REGRESSED_MARK = "⇓"
MARK_LEGEND = {
    "✓": "✓ reached its threshold",
    "✗": "✗ below its threshold",
    REGRESSED_MARK: f"{REGRESSED_MARK} regressed against the baseline",
}


def verdict_mark(result: CapabilityResult) -> str:
    """A measured result's mark: ✓ or ✗ by its threshold, ⇓ for a gate regression (a
    regressed test that also missed its threshold is ✗⇓), so the two ways to fail differ."""
    mark = MARKS.get(result.status, "?")
    regressed = isinstance(result.gate, GateComparison) and result.gate.regressed
    if result.status != "failed" or not regressed:
        return mark
    return ("✗" if result.threshold_met is False else "") + REGRESSED_MARK


def mark_legend(report: Report) -> str | None:
    """``marks: ✓ reached its threshold, ✗ below its threshold, ...`` for the marks the
    matrix shows, when one of them is not ✓; else None."""
    shown = {
        char
        for section in report.sections
        for cell in section.cells
        if cell.result.status in MARKS
        for char in verdict_mark(cell.result)
    }
    if not shown - {"✓"}:
        return None
    return "marks: " + ", ".join(text for mark, text in MARK_LEGEND.items() if mark in shown)


COLOURS = {"drop": "red", "gain": "green"}

Segment = tuple[str, str | None]
"""A piece of a line and its colour (None: the terminal's default)."""


def cell_text(cell: Cell | None, with_n: bool = True) -> str:
    """One matrix cell: ``61.3% ✗ (n=400) -12.5▼``, ``87.0% ✓*``, ``40.0% ✗ xfail``, ``ERROR``,
    ``skip`` or ``-``; ``*`` marks examples left unscored, ``xfail`` / ``XPASS`` a known
    failure, then come the deltas (baseline, reference model), or ``not gated`` when a
    baseline was given but could not gate this item (the summary below says why)."""
    if cell is None:
        return "-"
    result = cell.result
    mark = UNSCORED_MARK if cell.unscored else ""
    if result.status == "error":
        return "ERROR" + mark
    if result.status == "skipped":
        return "skip" + mark
    text = f"{cell.judged_text:>6} {verdict_mark(result)}{mark}"
    if result.known_failure:  # expected to fail: a fail is xfail, a pass is XPASS
        text += " xfail" if result.status in ("failed", "xfailed") else " XPASS"
    if with_n:
        text += f" (n={result.n})"
    gate = ["not gated"] if isinstance(result.gate, GateWarning) else []
    return " ".join([text, *gate, *(d.marked for d in cell.deltas)])


def _layout(report: Report, with_n: bool) -> tuple[list[str], list[list[str]], bool]:
    """Header and body cells (label, [threshold], models...) before any truncation."""
    names = report.model_names
    show_threshold = any(s.threshold is not None for s in report.sections)
    header = [_LABEL_HEADER, *([_THRESHOLD_HEADER] if show_threshold else []), *names]
    body = []
    for section in report.sections:
        cells = [section.label]
        if show_threshold:
            cells.append(fmt.pct(section.threshold) if section.threshold is not None else "-")
        cells.extend(cell_text(section.cell(name), with_n) for name in names)
        body.append(cells)
    return header, body, show_threshold


def _widths(header: list[str], body: list[list[str]]) -> list[int]:
    return [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]


def _total(widths: list[int]) -> int:
    return sum(widths) + len(_GAP) * (len(widths) - 1)


def _fit(header: list[str], body: list[list[str]], first_model: int, width: int) -> list[int]:
    """Column widths after shrinking the label column, then the model headers, to ``width``."""
    widths = _widths(header, body)
    excess = _total(widths) - width
    if excess > 0:
        widths[0] = max(_MIN_LABEL, widths[0] - excess, len(_LABEL_HEADER))
        widths[0] = min(widths[0], _widths(header, body)[0])
    excess = _total(widths) - width
    for i in range(first_model, len(widths)):
        if excess <= 0:
            break
        cell_width = max((len(line[i]) for line in body), default=0)
        floor = max(cell_width, _MIN_HEADER)
        cut = min(excess, widths[i] - floor)
        if cut > 0:
            widths[i] -= cut
            excess -= cut
    return widths


def _line(cells: list[str], widths: list[int]) -> str:
    padded = [fmt.truncate(c, w).ljust(w) for c, w in zip(cells, widths, strict=True)]
    return _GAP.join(padded).rstrip()


def _segments(cells: list[str], widths: list[int], colours: list[str | None]) -> list[Segment]:
    """A table line as coloured pieces; joined, it equals ``_line(cells, widths)``."""
    out: list[Segment] = []
    for text, w, colour in zip(cells, widths, colours, strict=True):
        out += [(_GAP, None), (fmt.truncate(text, w).ljust(w), colour)]
    out = out[1:]
    while out and not out[-1][0].strip():
        out.pop()
    if out:
        out[-1] = (out[-1][0].rstrip(), out[-1][1])
    return out


def plain_table(header: list[str], body: list[list[str]]) -> list[str]:
    """A fixed-width table with a rule under its header, each column as wide as its
    widest cell."""
    widths = _widths(header, body)
    lines = [_line(header, widths), _line(["-" * w for w in widths], widths)]
    return lines + [_line(cells, widths) for cells in body]


def _footer(report: Report) -> list[str]:
    """Per model counts, then what the ``*`` and the deltas in the cells mean."""
    lines = [
        f"{name}: {c['passed']} passed, {c['failed']} failed, "
        f"{c['error']} error, {c['skipped']} skipped"
        + "".join(f", {c[s]} {s}" for s in ("xfailed", "xpassed") if c.get(s))
        for name, c in report.counts.items()
    ]
    legend = mark_legend(report)
    if legend is not None:
        lines.append(legend)
    for section, cell in report.unscored:
        lines.append(
            f"{UNSCORED_MARK} {section.label} [{cell.model}]: {cell.unscored} example(s) "
            f"unscored ({cell.unscored_text}; --vl-missing=skip)"
        )
    kinds = {d.kind: d.against for d in report.deltas}
    if kinds:
        against = []
        if "gate" in kinds:
            against.append("the baseline")
        if "reference" in kinds:
            against.append(f"the first model {kinds['reference']}")
        lines.append(
            f"deltas: points vs {' and vs '.join(against)}; ▼ significant drop, ▲ significant gain"
        )
    return lines


def matrix_lines(report: Report, width: int = 100) -> list[list[Segment]]:
    """The terminal table and its footer as coloured pieces; ``[]`` without results."""
    if not report.sections:
        return []
    header, body, show_threshold = _layout(report, with_n=True)
    if _total(_widths(header, body)) > width:
        header, body, show_threshold = _layout(report, with_n=False)
    first_model = 2 if show_threshold else 1
    widths = _fit(header, body, first_model, width)
    plain: list[str | None] = [None] * len(widths)
    lines = [
        _segments(header, widths, plain),
        _segments(["-" * w for w in widths], widths, plain),
    ]
    for section, cells in zip(report.sections, body, strict=True):
        cells = [fmt.label(section.capability, section.suffix, widths[0]), *cells[1:]]
        colours = [None] * first_model + [
            COLOURS.get(cell.significance) if (cell := section.cell(n)) else None
            for n in report.model_names
        ]
        lines.append(_segments(cells, widths, colours))
    lines.append([])
    lines += [[(text, None)] for text in _footer(report)]
    return lines


def format_matrix(report: Report, width: int = 100) -> list[str]:
    """Plain lines of the terminal table plus its footer; ``[]`` without results."""
    return ["".join(text for text, _ in line) for line in matrix_lines(report, width)]
