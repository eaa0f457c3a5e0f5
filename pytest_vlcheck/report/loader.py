"""Read and validate a ``matrix.json`` document (the report contract, version 1).

Every renderer consumes the validated form produced here, both for a live run and for
``vlcheck report matrix.json``, so a re-rendered report is byte-identical to the original.
Validation fills defaults for the optional fields and turns non-finite numbers into ``None``
(``null``), which is how ``matrix.json`` stores an undefined value.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = [
    "REPORT_VERSION",
    "STATUSES",
    "ReportFormatError",
    "read_matrix",
    "validate_document",
]

REPORT_VERSION = 1
STATUSES = ("passed", "failed", "error", "skipped")

_REQUIRED_TEXT = ("file", "test", "capability", "task", "model", "status")
_REQUIRED_INT = ("n", "passed")
_REQUIRED_NUMBER = ("pass_rate", "ci_low", "ci_high", "threshold")


class ReportFormatError(ValueError):
    """``matrix.json`` is not a valid vlcheck report; the message names the file and field."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class _Checker:
    """Collects the location prefix so every message reads ``SOURCE: results[3].n: ...``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> ReportFormatError:
        return ReportFormatError(f"{self.source}: {where}: {message}")

    def text(self, obj: dict[str, Any], key: str, where: str) -> str:
        if key not in obj:
            raise self.fail(where, f"missing key {key!r}, expected a string")
        v = obj[key]
        if not isinstance(v, str):
            raise self.fail(f"{where}.{key}", f"expected a string, got {v!r}")
        return v

    def integer(self, v: Any, where: str) -> int:
        if not _is_int(v) or v < 0:
            raise self.fail(where, f"expected a non-negative integer, got {v!r}")
        return int(v)

    def number(self, v: Any, where: str) -> float | int | None:
        """A number or null; NaN and infinities become None (JSON has no spelling for them)."""
        if v is None:
            return None
        if not _is_number(v):
            raise self.fail(where, f"expected a number or null, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v

    def mapping(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, f"expected an object, got {type(v).__name__}")
        return v

    def listing(self, v: Any, where: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(where, f"expected a list, got {type(v).__name__}")
        return v


def _model(c: _Checker, raw: Any, where: str) -> dict[str, Any]:
    m = dict(c.mapping(raw, where))
    c.text(m, "name", where)
    for key in ("spec", "fingerprint"):
        v = m.setdefault(key, None if key == "fingerprint" else "")
        if v is not None and not isinstance(v, str):
            raise c.fail(f"{where}.{key}", f"expected a string or null, got {v!r}")
    return m


def _slices(c: _Checker, raw: Any, where: str) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for tag, values in c.mapping(raw, where).items():
        tag_where = f"{where}[{tag!r}]"
        out[tag] = {}
        for val, cell in c.mapping(values, tag_where).items():
            cell_where = f"{tag_where}[{val!r}]"
            cell = dict(c.mapping(cell, cell_where))
            for key in ("n", "passed"):
                if key not in cell:
                    raise c.fail(cell_where, f"missing key {key!r}, expected an integer")
                cell[key] = c.integer(cell[key], f"{cell_where}.{key}")
            cell["pass_rate"] = c.number(cell.get("pass_rate"), f"{cell_where}.pass_rate")
            out[tag][val] = cell
    return out


def _failure(c: _Checker, raw: Any, where: str) -> dict[str, Any]:
    f = dict(c.mapping(raw, where))
    f["id"] = str(f.get("id", ""))
    for key in ("images", "texts"):
        items = c.listing(f.get(key, []), f"{where}.{key}")
        if not all(isinstance(s, str) for s in items):
            raise c.fail(f"{where}.{key}", "expected a list of strings")
        f[key] = list(items)
    rows = c.listing(f.get("scores", []), f"{where}.scores")
    f["scores"] = [
        [
            c.number(x, f"{where}.scores[{i}][{j}]")
            for j, x in enumerate(c.listing(row, f"{where}.scores[{i}]"))
        ]
        for i, row in enumerate(rows)
    ]
    detail = f.get("detail", "")
    if not isinstance(detail, str):
        raise c.fail(f"{where}.detail", f"expected a string, got {detail!r}")
    f["detail"] = detail
    return f


def _result(c: _Checker, raw: Any, where: str) -> dict[str, Any]:
    r = dict(c.mapping(raw, where))
    for key in _REQUIRED_TEXT:
        c.text(r, key, where)
    if r["status"] not in STATUSES:
        raise c.fail(
            f"{where}.status", f"expected one of {', '.join(STATUSES)}, got {r['status']!r}"
        )
    for key in _REQUIRED_INT:
        if key not in r:
            raise c.fail(where, f"missing key {key!r}, expected an integer")
        r[key] = c.integer(r[key], f"{where}.{key}")
    for key in _REQUIRED_NUMBER:
        if key not in r:
            raise c.fail(where, f"missing key {key!r}, expected a number or null")
        r[key] = c.number(r[key], f"{where}.{key}")
    r["chance"] = c.number(r.get("chance"), f"{where}.chance")
    r.setdefault("criterion", "")
    for key in ("criterion", "message"):  # message: optional reason for a skip or an error
        text = r.get(key, "")
        if not isinstance(text, str):
            raise c.fail(f"{where}.{key}", f"expected a string, got {text!r}")
    metrics = c.mapping(r.get("metrics", {}), f"{where}.metrics")
    r["metrics"] = {k: c.number(v, f"{where}.metrics[{k!r}]") for k, v in metrics.items()}
    r["slices"] = _slices(c, r.get("slices", {}), f"{where}.slices")
    failures = c.listing(r.get("failures", []), f"{where}.failures")
    r["failures"] = [_failure(c, f, f"{where}.failures[{i}]") for i, f in enumerate(failures)]
    unscored = c.mapping(r.get("unscored", {}), f"{where}.unscored")
    r["unscored"] = {k: c.integer(v, f"{where}.unscored[{k!r}]") for k, v in unscored.items()}
    return r


def validate_document(
    doc: Any, source: str = "matrix.json"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Check a parsed report document; return normalised copies of its models and results.

    Raises ReportFormatError naming ``source`` and the offending field. Unknown keys are kept
    (a newer writer may add fields); the ``summary`` key is derived data and is ignored.
    """
    c = _Checker(source)
    if not isinstance(doc, dict) or "vlcheck_report" not in doc:
        raise ReportFormatError(
            f'{source}: not a vlcheck report: expected a JSON object with "vlcheck_report": '
            f"{REPORT_VERSION}"
        )
    version = doc["vlcheck_report"]
    if not _is_int(version) or version != REPORT_VERSION:
        raise ReportFormatError(
            f"{source}: unsupported report version {version!r}: this vlcheck reads version "
            f"{REPORT_VERSION}"
        )
    for key in ("models", "results"):
        if key not in doc:
            raise c.fail("document", f"missing key {key!r}, expected a list")
    raw_models = c.listing(doc["models"], "models")
    models = [_model(c, m, f"models[{i}]") for i, m in enumerate(raw_models)]
    names: set[str] = set()
    for i, m in enumerate(models):
        if m["name"] in names:
            raise c.fail(f"models[{i}].name", f"duplicate model name {m['name']!r}")
        names.add(m["name"])
    raw_results = c.listing(doc["results"], "results")
    results = [_result(c, r, f"results[{i}]") for i, r in enumerate(raw_results)]
    seen: set[tuple[str, str, str]] = set()
    for i, r in enumerate(results):
        if r["model"] not in names:
            raise c.fail(f"results[{i}].model", f"model {r['model']!r} is not listed in models")
        key = (r["file"], r["test"], r["model"])
        if key in seen:
            raise c.fail(
                f"results[{i}]", f"duplicate result for {r['file']}::{r['test']}[{r['model']}]"
            )
        seen.add(key)
    return models, results


def read_matrix(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Load ``matrix.json``; return ``(models, results)`` ready for the renderers.

    Raises ReportFormatError with ``PATH:LINE`` for malformed JSON and ``PATH: field`` for a
    document that is not a version-1 vlcheck report.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportFormatError(f"{p}: no such file, expected a matrix.json report") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFormatError(f"{p}: cannot read the report: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportFormatError(
            f"{p}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    return validate_document(doc, str(p))
