"""``matrix.md``: errors first, then the capability matrix as a Markdown table, then per test
its numbers, deltas, metrics and slices. A formatter over ``sections.Report``; text from
checklists is escaped so it cannot break the tables."""

from __future__ import annotations

import re

from pytest_vlcheck import fmt
from pytest_vlcheck.report.prior_view import prior_markdown
from pytest_vlcheck.report.sections import Cell, Report, Section
from pytest_vlcheck.report.terminal import cell_text, mark_legend

__all__ = ["escape_md", "markdown_table", "render_markdown"]

# ASCII punctuation that means something in (GitHub) Markdown or inline HTML.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~])")


def escape_md(text: object) -> str:
    """Backslash-escape Markdown syntax; newlines become spaces so a table row stays one line."""
    flat = " ".join(str(text).splitlines())
    return _SPECIAL.sub(r"\\\1", flat)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of cells already escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _errors(report: Report) -> list[str]:
    """Collection errors and errored results, each with its message: never a silent report."""
    lines = [f"- {escape_md(e.location)}: {escape_md(e.message)}" for e in report.errors]
    lines += [
        f"- {escape_md(s.test_id)} \\[{escape_md(c.model)}\\]: "
        f"{escape_md(c.result.message or 'error (no message)')}"
        for s, c in report.result_errors
    ]
    return ["## Errors", "", *lines, ""] if lines else []


def _matrix_table(report: Report) -> list[str]:
    names = report.model_names
    header = ["capability", "test", "threshold", *(escape_md(n) for n in names)]
    rows = [
        [
            escape_md(s.label),
            escape_md(s.test_id),
            fmt.pct(s.threshold) if s.threshold is not None else "-",
            *(escape_md(cell_text(s.cell(n)).strip()) for n in names),
        ]
        for s in report.sections
    ]
    notes = []
    legend = mark_legend(report)
    if legend is not None:
        notes.append(escape_md(legend) + ".")
    if report.unscored:
        notes.append("\\* examples left unscored (`--vl-missing=skip`): see the test's table.")
    if report.deltas:
        notes.append(
            "Deltas in points vs the baseline, then vs the run's first model; "
            "▼ a significant drop, ▲ a significant gain."
        )
    return [*markdown_table(header, rows), "", *notes, *([""] if notes else [])]


def _models_table(report: Report) -> list[str]:
    rows = [
        [
            escape_md(m.name),
            escape_md(m.spec or "-"),
            escape_md(m.fingerprint or "-"),
            *(str(report.counts[m.name][s]) for s in report.status_columns),
        ]
        for m in report.models
    ]
    header = ["model", "spec", "fingerprint", *report.status_columns]
    return markdown_table(header, rows)


def _result_row(cell: Cell) -> list[str]:
    r = cell.result
    return [
        escape_md(cell.model),
        r.status,
        str(r.n),
        str(r.passed),
        fmt.pct(cell.rate),
        cell.ci_text,
        fmt.pct(r.threshold),
        escape_md(cell.unscored_text),
    ]


def _facts(section: Section) -> str:
    facts = [f"test {escape_md(section.test_id)}", f"task {escape_md(section.task)}"]
    if section.criterion:
        facts.append(f"criterion {escape_md(section.criterion)}")
    if section.chance_text:
        facts.append(section.chance_text)
    return ", ".join(facts)


def _test_section(section: Section) -> list[str]:
    lines = [f"### {escape_md(section.label)}", "", _facts(section), ""]
    header = ["model", "status", "n", "passed", "pass rate", "95% CI", "threshold", "unscored"]
    lines += [*markdown_table(header, [_result_row(c) for c in section.cells]), ""]
    notes = [f"- {escape_md(n)}: {escape_md(message)}" for n, message in section.messages]
    notes += [
        f"- {escape_md(c.model)}: {escape_md(d.describe)}" for c in section.cells for d in c.deltas
    ]
    if notes:
        lines += [*notes, ""]
    models = [escape_md(n) for n in section.models]
    if section.metric_names:
        body = [
            [escape_md(k), *(fmt.value(v) for v in section.metric(k))] for k in section.metric_names
        ]
        lines += ["Metrics:", "", *markdown_table(["metric", *models], body), ""]
    for table in section.slices:
        body = [
            [escape_md(v), *(table.text(c) for c in cells)]
            for v, cells in zip(table.values, table.cells, strict=True)
        ]
        lines += [
            f"Slice by {escape_md(table.tag)}:",
            "",
            *markdown_table([escape_md(table.tag), *models], body),
            "",
        ]
    lines += prior_markdown(section.priors)
    return lines


def render_markdown(report: Report) -> str:
    """The whole ``matrix.md`` text (deterministic; no timestamps)."""
    lines = ["# vlcheck capability matrix", "", *_errors(report), "## Models", ""]
    lines += [*_models_table(report), ""]
    if not report.sections:
        return "\n".join([*lines, "No results.", ""])
    lines += ["## Matrix", "", *_matrix_table(report)]
    lines += ["## Tests", ""]
    for section in report.sections:
        lines += _test_section(section)
    return "\n".join(lines).rstrip("\n") + "\n"
