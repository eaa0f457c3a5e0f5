"""``matrix.csv``: one line per result, for spreadsheets and dataframes.

Scalar fields keep full precision (what ``matrix.json`` holds); metrics are flattened into
``metric.NAME`` columns over the union of names, sorted so the columns do not depend on the
order tests ran in. The delta columns hold the gate's change against the baseline and the
change against the run's first model (``sections.Delta``). An empty cell means null or not
reported.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from pytest_vlcheck.report.sections import Delta, Kind, Report
from pytest_vlcheck.results import REPORTED_FIELDS

__all__ = ["CSV_FIELDS", "DELTA_FIELDS", "render_csv"]

CSV_FIELDS = (*REPORTED_FIELDS, "unscored")
"""The result's columns: the reported fields JUnit carries too, then the unscored total."""
DELTA_FIELDS = (
    "baseline_model",
    "baseline_delta_pts",
    "baseline_p_corrected",
    "reference_model",
    "reference_delta_pts",
    "reference_p_holm",
)


def _cell(value: Any) -> Any:
    return "" if value is None else value


def _delta_cells(deltas: Mapping[Kind, Delta]) -> list[Any]:
    cells: list[Any] = []
    kinds: tuple[Kind, ...] = ("gate", "reference")
    for kind in kinds:
        d = deltas.get(kind)
        cells += ["", "", ""] if d is None else [d.against, d.delta_pts, _cell(d.p_value)]
    return cells


def render_csv(report: Report) -> str:
    """The whole ``matrix.csv`` text, one line per result in ``matrix.json`` order;
    ``unscored`` is the total of the unscored counts."""
    deltas: dict[tuple[str, str, str], dict[Kind, Delta]] = {
        (c.result.file, c.result.test, c.model): {d.kind: d for d in c.deltas}
        for s in report.sections
        for c in s.cells
    }
    metric_names = sorted({k for r in report.results for k in r.metrics})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CSV_FIELDS, *DELTA_FIELDS, *(f"metric.{k}" for k in metric_names)])
    for r in report.results:
        fields = [
            sum(r.unscored.values()) if f == "unscored" else _cell(getattr(r, f))
            for f in CSV_FIELDS
        ]
        fields += _delta_cells(deltas[(r.file, r.test, r.model)])
        fields += [_cell(r.metrics.get(k)) for k in metric_names]
        writer.writerow(fields)
    return buffer.getvalue()
