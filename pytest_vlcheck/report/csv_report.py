"""``matrix.csv``: one line per result, for spreadsheets and dataframes.

Scalar fields keep full precision (what ``matrix.json`` holds); metrics are flattened into
``metric.NAME`` columns over the union of names, sorted so the columns do not depend on the
order tests ran in. An empty cell means null or not reported.
"""

from __future__ import annotations

import csv
import io
from typing import Any

__all__ = ["CSV_FIELDS", "render_csv"]

CSV_FIELDS = (
    "file",
    "test",
    "capability",
    "task",
    "model",
    "status",
    "criterion",
    "n",
    "passed",
    "pass_rate",
    "ci_low",
    "ci_high",
    "threshold",
    "chance",
    "unscored",
)


def _cell(value: Any) -> Any:
    return "" if value is None else value


def render_csv(models: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """The whole ``matrix.csv`` text; ``unscored`` is the total of the unscored counts.

    ``models`` is accepted for symmetry with the other renderers; rows follow ``results``.
    """
    metric_names = sorted({k for r in results for k in r["metrics"]})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CSV_FIELDS, *(f"metric.{k}" for k in metric_names)])
    for r in results:
        row = [sum(r["unscored"].values()) if f == "unscored" else _cell(r[f]) for f in CSV_FIELDS]
        row.extend(_cell(r["metrics"].get(k)) for k in metric_names)
        writer.writerow(row)
    return buffer.getvalue()
