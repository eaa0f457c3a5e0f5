"""Curves: one row per checkpoint (step, file, each test's pass rate), ``OUT/curves.csv``.

A row is read from a run's ``matrix.json`` document, so the watcher's curves and a checkpoint
glob's run (``--vl-model=run=...@ckpts/*.safetensors --vl-report``) give equal rows for the
same checkpoints: ``rows_of_matrix`` reads either. Columns are the tests as ``FILE::TEST``
in first-seen order; a pass rate is written with every digit (``repr``), empty when the test
was not measured (errored, skipped), so every number is the report's own.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vlcheck.atomic import atomic_write_text
from pytest_vlcheck.models.checkpoints import weights_part
from pytest_vlcheck.models.registry import parse_spec

CURVES_FILE = "curves.csv"


@dataclass(frozen=True)
class CurveRow:
    step: int | None
    file: str
    rates: Mapping[str, float | None]


def column_of(result: Mapping[str, Any]) -> str:
    """A test's column: its checklist (relative to the rootdir) and id."""
    return f"{result['file']}::{result['test']}"


def checkpoint_file(spec_text: str) -> str:
    """The weights path a checkpoint's spec names (the spec itself when it names none)."""
    spec = parse_spec(spec_text)
    weights = weights_part(spec.scheme, spec.body)[1]
    return weights or spec_text


def rows_of_matrix(doc: Mapping[str, Any]) -> list[CurveRow]:
    """One row per model of a ``matrix.json`` document, in its model order: the model's
    ``step`` (a glob's checkpoints carry theirs), its weights file and its pass rates."""
    rows = []
    for model in doc["models"]:
        rates: dict[str, float | None] = {}
        for result in doc["results"]:
            if result["model"] == model["name"]:
                measured = result["n"] > 0 and result["status"] not in ("error", "skipped")
                rates[column_of(result)] = result["pass_rate"] if measured else None
        rows.append(CurveRow(model.get("step"), checkpoint_file(model["spec"]), rates))
    return rows


def render_csv(rows: Iterable[CurveRow]) -> str:
    """The curves as CSV text: ``step,file,TEST...``, one line per row as given."""
    rows = list(rows)
    columns = list(dict.fromkeys(key for row in rows for key in row.rates))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", "file", *columns])
    for row in rows:
        rates = [row.rates.get(key) for key in columns]
        step = "" if row.step is None else row.step
        writer.writerow([step, row.file, *("" if r is None else repr(r) for r in rates)])
    return out.getvalue()


def write_curves(path: Path, rows: Iterable[CurveRow]) -> None:
    atomic_write_text(path, render_csv(rows))
