"""``matrix.md``: the capability matrix as a Markdown table, then per test its numbers,
metrics and slices. Text from checklists is escaped so it cannot break the tables."""

from __future__ import annotations

import re
from typing import Any

from pytest_vlcheck.report import fmt
from pytest_vlcheck.report.matrix import (
    Matrix,
    Row,
    build_matrix,
    measured_rate,
    status_counts,
)
from pytest_vlcheck.report.terminal import cell_text

__all__ = ["escape_md", "render_markdown"]

# ASCII punctuation that means something in (GitHub) Markdown or inline HTML.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~])")


def escape_md(text: object) -> str:
    """Backslash-escape Markdown syntax; newlines become spaces so a table row stays one line."""
    flat = " ".join(str(text).splitlines())
    return _SPECIAL.sub(r"\\\1", flat)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _matrix_table(matrix: Matrix) -> list[str]:
    names = matrix.model_names
    header = ["capability", "test", "threshold", *(escape_md(n) for n in names)]
    rows = []
    for row in matrix.rows:
        threshold = row.shared("threshold")
        rows.append(
            [
                escape_md(row.label),
                escape_md(row.test_id),
                fmt.pct(threshold) if threshold is not None else "-",
                *(cell_text(row.cells.get(n)).strip() for n in names),
            ]
        )
    return _table(header, rows)


def _models_table(matrix: Matrix, results: list[dict[str, Any]]) -> list[str]:
    counts = status_counts(matrix.models, results)
    rows = []
    for m in matrix.models:
        c = counts[m["name"]]
        rows.append(
            [
                escape_md(m["name"]),
                escape_md(m.get("spec") or "-"),
                escape_md(m.get("fingerprint") or "-"),
                *(str(c[s]) for s in ("passed", "failed", "error", "skipped")),
            ]
        )
    header = ["model", "spec", "fingerprint", "passed", "failed", "error", "skipped"]
    return _table(header, rows)


def _unscored(result: dict[str, Any]) -> str:
    parts = [f"{escape_md(k)}: {v}" for k, v in result["unscored"].items()]
    return ", ".join(parts) if parts else "-"


def _test_section(row: Row, names: list[str]) -> list[str]:
    present = [n for n in names if n in row.cells]
    first = row.cells[present[0]]
    lines = [f"### {escape_md(row.label)}", ""]
    facts = [f"test {escape_md(row.test_id)}", f"task {escape_md(first['task'])}"]
    if first.get("criterion"):
        facts.append(f"criterion {escape_md(first['criterion'])}")
    chance = row.shared("chance")
    if chance is not None:
        facts.append(f"chance {fmt.pct(chance)}")
    elif first.get("chance", 0) is None:
        facts.append("no chance level")
    lines += [", ".join(facts), ""]
    header = ["model", "status", "n", "passed", "pass rate", "95% CI", "threshold", "unscored"]
    body = [
        [
            escape_md(n),
            r["status"],
            str(r["n"]),
            str(r["passed"]),
            fmt.pct(measured_rate(r)),
            fmt.ci(r["ci_low"], r["ci_high"]) if r["n"] else fmt.MISSING,
            fmt.pct(r["threshold"]),
            _unscored(r),
        ]
        for n in present
        for r in [row.cells[n]]
    ]
    lines += [*_table(header, body), ""]
    notes = [(n, row.cells[n]["message"]) for n in present if row.cells[n].get("message")]
    if notes:
        lines += [*(f"- {escape_md(n)}: {escape_md(message)}" for n, message in notes), ""]

    metric_names = list(dict.fromkeys(k for n in present for k in row.cells[n]["metrics"]))
    if metric_names:
        body = [
            [escape_md(k), *(fmt.value(row.cells[n]["metrics"].get(k)) for n in present)]
            for k in metric_names
        ]
        lines += ["Metrics:", "", *_table(["metric", *map(escape_md, present)], body), ""]

    tags = list(dict.fromkeys(t for n in present for t in row.cells[n]["slices"]))
    for tag in tags:
        values = list(
            dict.fromkeys(v for n in present for v in row.cells[n]["slices"].get(tag, {}))
        )
        body = []
        for v in values:
            cells = []
            for n in present:
                s = row.cells[n]["slices"].get(tag, {}).get(v)
                cells.append(
                    "-" if s is None else f"{fmt.pct(s['pass_rate'])} ({s['passed']}/{s['n']})"
                )
            body.append([escape_md(v), *cells])
        lines += [
            f"Slice by {escape_md(tag)}:",
            "",
            *_table([escape_md(tag), *map(escape_md, present)], body),
            "",
        ]
    return lines


def render_markdown(models: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """The whole ``matrix.md`` text (deterministic; no timestamps)."""
    matrix = build_matrix(models, results)
    lines = ["# vlcheck capability matrix", "", "## Models", ""]
    lines += [*_models_table(matrix, results), ""]
    if not matrix.rows:
        return "\n".join([*lines, "No results.", ""])
    lines += ["## Matrix", "", *_matrix_table(matrix), ""]
    lines += ["## Tests", ""]
    for row in matrix.rows:
        lines += _test_section(row, matrix.model_names)
    return "\n".join(lines).rstrip("\n") + "\n"
