"""Report files for a vlcheck run: ``matrix.json`` (the contract) plus md, csv and html views.

Rendering is a pure function of ``matrix.json``: ``render_files`` serialises the document
first and renders every human format from the parsed JSON (``report.html`` also embeds the
thumbnails the JSON names, from the ``thumbnails/`` folder beside it), so ``vlcheck report
matrix.json`` reproduces the original files byte for byte. Pure Python; imports neither pytest
nor torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_vlcheck.atomic import atomic_write_bytes, atomic_write_text
from pytest_vlcheck.report.csv_report import render_csv
from pytest_vlcheck.report.html import render_html
from pytest_vlcheck.report.loader import (
    ReportFormatError,
    RunError,
    parse_document,
    read_matrix,
    read_report,
)
from pytest_vlcheck.report.markdown import render_markdown
from pytest_vlcheck.report.matrix import matrix_document, matrix_json
from pytest_vlcheck.report.sections import build_report
from pytest_vlcheck.report.terminal import format_matrix, matrix_lines
from pytest_vlcheck.report.thumbnails import (
    copy_thumbnails,
    prune_thumbnails,
    thumbnail_data_uris,
    thumbnail_names,
)
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.run_meta import ModelMeta, RunBlock

__all__ = [
    "REPORT_FILES",
    "ReportFormatError",
    "RunError",
    "atomic_write_bytes",
    "atomic_write_text",
    "build_report",
    "format_matrix",
    "matrix_document",
    "matrix_lines",
    "read_matrix",
    "read_report",
    "render_files",
    "write_report",
]

REPORT_FILES = ("matrix.json", "matrix.md", "matrix.csv", "report.html")


def render_files(
    models: Sequence[ModelMeta],
    results: Sequence[CapabilityResult],
    source: str = "<results>",
    *,
    errors: Sequence[RunError] = (),
    thumbnails: Mapping[str, str] | None = None,
    run_block: RunBlock | None = None,
) -> dict[str, str]:
    """File name -> content for every report file, rendered from the serialised document.

    ``thumbnails`` (thumbnail file name -> data URI) is embedded into ``report.html`` only;
    ``matrix.json`` stays free of pixels; ``run_block`` is its ``run`` (how the run measured).
    Raises ReportFormatError (naming ``source``) when a result does not fit the contract.
    """
    text = matrix_json(matrix_document(models, results, errors, run_block=run_block))
    doc = parse_document(json.loads(text), source)
    report = build_report(doc.models, doc.results, doc.errors)
    return {
        "matrix.json": text,
        "matrix.md": render_markdown(report),
        "matrix.csv": render_csv(report),
        "report.html": render_html(report, thumbnails=thumbnails),
    }


def write_report(
    directory: str | Path,
    models: Sequence[ModelMeta],
    results: Sequence[CapabilityResult],
    *,
    errors: Sequence[RunError] = (),
    thumbnail_source: Path | None = None,
    run_block: RunBlock | None = None,
) -> list[Path]:
    """Write the four report files into ``directory`` (created if needed), each atomically.

    The failures' thumbnails are read from ``thumbnail_source/thumbnails/`` (default: the
    report's own folder), embedded into ``report.html`` and copied beside the new files;
    thumbnails there that the results do not name (an earlier run's) are deleted after.
    Returns the paths in the order of REPORT_FILES. Everything is rendered before the first
    file is written, so a rendering error leaves an existing report untouched.
    """
    out = Path(directory)
    source = out if thumbnail_source is None else thumbnail_source
    names = thumbnail_names(results)
    thumbnails = thumbnail_data_uris(source, names)
    files = render_files(models, results, errors=errors, thumbnails=thumbnails, run_block=run_block)
    out.mkdir(parents=True, exist_ok=True)
    copy_thumbnails(source, out, names)
    paths = []
    for name in REPORT_FILES:
        path = out / name
        atomic_write_text(path, files[name])
        paths.append(path)
    prune_thumbnails(out, names)
    return paths
