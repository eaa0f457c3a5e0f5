"""The capability matrix: tests as rows, models as columns, and the ``matrix.json`` document.

Every renderer (terminal, markdown, csv, html) lays out the same ``Matrix`` so that rows,
labels and per-model counts agree between formats.
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck.report.loader import REPORT_VERSION, STATUSES, RunError
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.run_meta import ModelMeta, RunBlock

__all__ = [
    "Matrix",
    "Row",
    "build_matrix",
    "matrix_document",
    "matrix_json",
    "status_counts",
]


@dataclass(frozen=True)
class Row:
    """One checklist test: its label in the matrix and its result per model name.

    ``label`` is the capability plus ``suffix`` (`` (test)`` when the capability is not
    unique), kept apart so a narrow table can shorten the capability and keep the suffix.
    """

    capability: str
    file: str
    test: str
    label: str
    suffix: str
    cells: dict[str, CapabilityResult]

    @property
    def test_id(self) -> str:
        return f"{self.file}::{self.test}"

    def shared(self, key: str) -> Any:
        """The value of ``key`` when every model's result agrees on it, else None."""
        values = [getattr(cell, key) for cell in self.cells.values()]
        if values and all(v == values[0] for v in values):
            return values[0]
        return None


@dataclass(frozen=True)
class Matrix:
    """Models (column order) and rows (grouped by capability, file order within one)."""

    models: list[ModelMeta]
    rows: list[Row]

    @property
    def model_names(self) -> list[str]:
        return [m.name for m in self.models]


def _suffixes(keys: list[tuple[str, str, str]]) -> list[str]:
    """Nothing when the capability is unique, else the test id (then file::test)."""
    by_capability = Counter(cap for cap, _, _ in keys)
    by_capability_test = Counter((cap, test) for cap, _, test in keys)
    suffixes = []
    for cap, file, test in keys:
        if by_capability[cap] == 1:
            suffixes.append("")
        elif by_capability_test[(cap, test)] == 1:
            suffixes.append(f" ({test})")
        else:
            suffixes.append(f" ({file}::{test})")
    return suffixes


def _grouped(keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The rows of one capability together, and capabilities of one area (the name's first
    segment: ``attribute``, ``object``) together, each in the order it first appears; the
    rows of a capability keep their order (the run's: file, line). A reader looks a
    capability up once, wherever its tests sit in the files."""
    areas: dict[str, int] = {}
    capabilities: dict[str, int] = {}
    for capability, _, _ in keys:
        areas.setdefault(capability.split("/")[0], len(areas))
        capabilities.setdefault(capability, len(capabilities))
    order = {key: index for index, key in enumerate(keys)}
    return sorted(keys, key=lambda k: (areas[k[0].split("/")[0]], capabilities[k[0]], order[k]))


def build_matrix(models: Sequence[ModelMeta], results: Sequence[CapabilityResult]) -> Matrix:
    """Group results into rows keyed by (capability, file, test), grouped by capability
    (``_grouped``) and in first-seen order (file order) within one."""
    cells: dict[tuple[str, str, str], dict[str, CapabilityResult]] = {}
    for r in results:
        key = (r.capability, r.file, r.test)
        cells.setdefault(key, {})[r.model] = r
    keys = _grouped(list(cells))
    rows = [
        Row(cap, file, test, label=cap + suffix, suffix=suffix, cells=cells[(cap, file, test)])
        for (cap, file, test), suffix in zip(keys, _suffixes(keys), strict=True)
    ]
    return Matrix(models=list(models), rows=rows)


def status_counts(
    models: Sequence[ModelMeta], results: Sequence[CapabilityResult]
) -> dict[str, dict[str, int]]:
    """Per model: how many tests passed, failed, errored, were skipped, and the total."""
    counts: dict[str, dict[str, int]] = {m.name: dict.fromkeys(STATUSES, 0) for m in models}
    for r in results:
        per_model = counts.setdefault(r.model, dict.fromkeys(STATUSES, 0))
        per_model[r.status] = per_model.get(r.status, 0) + 1
    for per_model in counts.values():
        per_model["total"] = sum(per_model[s] for s in STATUSES)
    return counts


def _finite(obj: Any) -> Any:
    """Deep copy with NaN/inf replaced by None: strict JSON cannot spell them."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return copy.deepcopy(obj)


def matrix_document(
    models: Sequence[ModelMeta],
    results: Sequence[CapabilityResult],
    errors: Sequence[RunError] = (),
    *,
    run_block: RunBlock | None = None,
) -> dict[str, Any]:
    """The ``matrix.json`` document: the contract keys, the run's ``errors`` (collection
    errors, ``[]`` when none), a derived per-model ``summary`` and, when given, the ``run``
    block (how the run measured and its shard plan; absent in files before it existed).

    Results pass through with full precision (only non-finite floats become null), in the
    order given; rounding happens only in the human-readable formats.
    """
    doc = {
        "vlcheck_report": REPORT_VERSION,
        "models": _finite([m.to_json() for m in models]),
        "results": _finite([r.to_json() for r in results]),
        "errors": [e.to_json() for e in errors],
        "summary": status_counts(models, results),
    }
    if run_block is not None:
        doc["run"] = _finite(run_block.to_json())
    return doc


def matrix_json(doc: dict[str, Any]) -> str:
    """Serialise a report document deterministically (stable key order, trailing newline)."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
