"""Read and validate a ``matrix.json`` document (the report contract, version 1).

Every renderer consumes the validated form produced here, both for a live run and for
``vlcheck report matrix.json``, so a re-rendered report is byte-identical to the original.
Validation fills defaults for the optional fields and turns non-finite numbers into ``None``
(``null``), which is how ``matrix.json`` stores an undefined value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vlcheck.results import STATUSES, CapabilityResult, ResultFormatError
from pytest_vlcheck.results.json_checks import JsonChecker, ReportFormatError, is_int, read_json
from pytest_vlcheck.results.manifest import check_report_folder
from pytest_vlcheck.results.run_meta import ModelMeta, RunBlock

__all__ = [
    "REPORT_VERSION",
    "STATUSES",
    "ReportDocument",
    "ReportFormatError",
    "RunError",
    "parse_document",
    "read_matrix",
    "read_report",
    "validate_document",
]

REPORT_VERSION = 1


@dataclass(frozen=True)
class RunError:
    """A problem that kept part of a run from producing results (a checklist that failed to
    collect): recorded in ``matrix.json``'s ``errors`` so a report never hides it."""

    file: str
    line: int | None
    message: str

    @property
    def location(self) -> str:
        """``FILE:LINE`` (or ``FILE`` when the line is unknown)."""
        return self.file if self.line is None else f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass(frozen=True)
class ReportDocument:
    """A validated ``matrix.json``: model metadata, result rows, the run's errors and its
    ``run`` block (None in a file written before the block existed)."""

    models: list[ModelMeta]
    results: list[CapabilityResult]
    errors: list[RunError]
    run: RunBlock | None = None


def _error(c: JsonChecker, raw: Any, where: str) -> RunError:
    e = c.mapping(raw, where)
    line = e.get("line")
    return RunError(
        file=c.text(e, "file", where),
        line=None if line is None else c.integer(line, f"{where}.line"),
        message=c.text(e, "message", where),
    )


def _result(raw: Any, where: str) -> CapabilityResult:
    try:
        return CapabilityResult.from_json(raw, where)
    except ResultFormatError as exc:
        raise ReportFormatError(str(exc)) from None


def validate_document(
    doc: Any, source: str = "matrix.json"
) -> tuple[list[ModelMeta], list[CapabilityResult]]:
    """Check a parsed report document; return normalised copies of its models and its
    results, typed.

    Raises ReportFormatError naming ``source`` and the offending field. Unknown keys are kept
    (a newer writer may add fields); the ``summary`` key is derived data and is ignored.
    """
    c = JsonChecker(source, ReportFormatError)
    if not isinstance(doc, dict) or "vlcheck_report" not in doc:
        raise ReportFormatError(
            f'{source}: not a vlcheck report: expected a JSON object with "vlcheck_report": '
            f"{REPORT_VERSION}"
        )
    version = doc["vlcheck_report"]
    if not is_int(version) or version != REPORT_VERSION:
        raise ReportFormatError(
            f"{source}: unsupported report version {version!r}: this vlcheck reads version "
            f"{REPORT_VERSION}"
        )
    for key in ("models", "results"):
        if key not in doc:
            raise c.fail("document", f"missing key {key!r}, expected a list")
    raw_models = c.listing(doc["models"], "models")
    models = [ModelMeta.from_json(c, m, f"models[{i}]") for i, m in enumerate(raw_models)]
    names: set[str] = set()
    for i, m in enumerate(models):
        if m.name in names:
            raise c.fail(f"models[{i}].name", f"duplicate model name {m.name!r}")
        names.add(m.name)
    raw_results = c.listing(doc["results"], "results")
    results = [_result(r, f"{source}: results[{i}]") for i, r in enumerate(raw_results)]
    seen: set[tuple[str, str, str]] = set()
    for i, r in enumerate(results):
        if r.model not in names:
            raise c.fail(f"results[{i}].model", f"model {r.model!r} is not listed in models")
        result_key = (r.file, r.test, r.model)
        if result_key in seen:
            raise c.fail(f"results[{i}]", f"duplicate result for {r.file}::{r.test}[{r.model}]")
        seen.add(result_key)
    return models, results


def parse_document(doc: Any, source: str = "matrix.json") -> ReportDocument:
    """``validate_document`` plus the optional ``errors`` list and ``run`` block (absent in
    older files)."""
    models, results = validate_document(doc, source)
    c = JsonChecker(source, ReportFormatError)
    raw_errors = c.listing(doc.get("errors", []), "errors")
    errors = [_error(c, e, f"errors[{i}]") for i, e in enumerate(raw_errors)]
    run = None if doc.get("run") is None else RunBlock.from_json(c, doc["run"])
    return ReportDocument(models, results, errors, run)


def read_report(path: str | Path) -> ReportDocument:
    """Load ``matrix.json`` ready for the renderers.

    Raises ReportFormatError with ``PATH:LINE`` for malformed JSON and ``PATH: field`` for a
    document that is not a version-1 vlcheck report.
    """
    check_report_folder(Path(path).parent)  # a matrix beside another run's files: refused
    doc = read_json(path, "a matrix.json report", ReportFormatError)
    return parse_document(doc, str(path))


def read_matrix(path: str | Path) -> tuple[list[ModelMeta], list[CapabilityResult]]:
    """``(models, results)`` of a ``matrix.json`` (``read_report`` also gives its errors)."""
    doc = read_report(path)
    return doc.models, doc.results
