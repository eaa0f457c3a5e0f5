"""GitHub Actions' view of a report: the matrix in the job summary, and one error annotation
per failed or errored test x model (and per checklist that failed to collect) at its
checklist's ``FILE:LINE``, so the pull request's diff shows it beside the test.

Annotations are workflow commands (``::error file=F,line=L,title=T::MESSAGE``) printed to
stdout; GitHub reads a command's data up to the end of the line, so ``%``, CR and LF are
escaped in the message, and ``:`` and ``,`` too in the properties, as its toolkit does.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_vlcheck.report.loader import ReportDocument, RunError
from pytest_vlcheck.report.markdown import render_markdown
from pytest_vlcheck.report.sections import build_report
from pytest_vlcheck.report.verdict import verdict_line
from pytest_vlcheck.results import CapabilityResult

FAILED = ("failed", "error")


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(file: str, line: int | None, title: str, message: str) -> str:
    where = f"file={escape_property(file)}"
    if line:
        where += f",line={line}"
    return f"::error {where},title={escape_property(title)}::{escape_data(message)}"


def _result_annotation(result: CapabilityResult) -> str:
    title = f"vlcheck {result.status}: {result.capability} ({result.test}) [{result.model}]"
    message = result.message if result.status == "error" and result.message else None
    return _command(result.file, result.line, title, message or verdict_line(result))


def _error_annotation(error: RunError) -> str:
    return _command(error.file, error.line, "vlcheck: checklist not collected", error.message)


def error_annotations(doc: ReportDocument) -> list[str]:
    """One ``::error`` command per collection error, then per failed or errored result."""
    failed: Iterable[CapabilityResult] = (r for r in doc.results if r.status in FAILED)
    return [*map(_error_annotation, doc.errors), *map(_result_annotation, failed)]


def job_summary(doc: ReportDocument) -> str:
    """The job summary's markdown: ``matrix.md`` as ``--vl-report`` writes it."""
    return render_markdown(build_report(doc.models, doc.results, doc.errors))
