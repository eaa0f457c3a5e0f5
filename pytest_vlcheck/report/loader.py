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

from pytest_vlcheck.results import STATUSES, CapabilityResult, ResultFormatError

__all__ = [
    "REPORT_VERSION",
    "STATUSES",
    "ReportFormatError",
    "read_matrix",
    "validate_document",
]

REPORT_VERSION = 1


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


def _result(raw: Any, where: str) -> dict[str, Any]:
    try:
        return CapabilityResult.from_json(raw, where).to_json()
    except ResultFormatError as exc:
        raise ReportFormatError(str(exc)) from None


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
    results = [_result(r, f"{source}: results[{i}]") for i, r in enumerate(raw_results)]
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
