"""The capability matrix as a compact fixed-width table for the pytest terminal summary.

Plain text without colour codes (the plugin decides on colour). The table tries to fit
``width``: first it drops the ``(n=...)`` part of the cells, then it truncates the row labels,
then the model headers.
"""

from __future__ import annotations

from typing import Any

from pytest_vlcheck.report import fmt
from pytest_vlcheck.report.matrix import Matrix, Row, build_matrix, measured_rate, status_counts

__all__ = ["cell_text", "format_matrix"]

_GAP = "  "
_MIN_LABEL = 12
_MIN_HEADER = 5
_LABEL_HEADER = "capability"
_THRESHOLD_HEADER = "threshold"
MARKS = {"passed": "✓", "failed": "✗"}


def cell_text(result: dict[str, Any] | None, with_n: bool = True) -> str:
    """One matrix cell: ``61.3% ✗ (n=400)``, ``87.0% ✓``, ``ERROR``, ``skip`` or ``-``."""
    if result is None:
        return "-"
    status = result["status"]
    if status == "error":
        return "ERROR"
    if status == "skipped":
        return "skip"
    text = f"{fmt.pct(measured_rate(result)):>6} {MARKS.get(status, '?')}"
    if with_n:
        text += f" (n={result['n']})"
    return text


def _shared_threshold(row: Row) -> str:
    threshold = row.shared("threshold")
    return fmt.pct(threshold) if threshold is not None else "-"


def _layout(matrix: Matrix, with_n: bool) -> tuple[list[str], list[list[str]], bool]:
    """Header and body cells (label, [threshold], models...) before any truncation."""
    names = matrix.model_names
    show_threshold = any(row.shared("threshold") is not None for row in matrix.rows)
    header = [_LABEL_HEADER, *([_THRESHOLD_HEADER] if show_threshold else []), *names]
    body = []
    for row in matrix.rows:
        cells = [row.label]
        if show_threshold:
            cells.append(_shared_threshold(row))
        cells.extend(cell_text(row.cells.get(name), with_n) for name in names)
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


def format_matrix(
    models: list[dict[str, Any]], results: list[dict[str, Any]], width: int = 100
) -> list[str]:
    """Lines of the terminal table plus one count line per model; ``[]`` without results."""
    if not results:
        return []
    matrix = build_matrix(models, results)
    header, body, show_threshold = _layout(matrix, with_n=True)
    if _total(_widths(header, body)) > width:
        header, body, show_threshold = _layout(matrix, with_n=False)
    first_model = 2 if show_threshold else 1
    widths = _fit(header, body, first_model, width)
    lines = [_line(header, widths), _line(["-" * w for w in widths], widths)]
    for row, cells in zip(matrix.rows, body, strict=True):
        cells = [fmt.label(row.capability, row.suffix, widths[0]), *cells[1:]]
        lines.append(_line(cells, widths))
    lines.append("")
    for name, c in status_counts(models, results).items():
        lines.append(
            f"{name}: {c['passed']} passed, {c['failed']} failed, "
            f"{c['error']} error, {c['skipped']} skipped"
        )
    return lines
