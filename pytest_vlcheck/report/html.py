"""``report.html``: one self-contained page (inline CSS and SVG, no scripts, no web assets).

Sections: models, the matrix coloured by verdict, pass-rate charts per model, the capability
radar, then per test its numbers, metrics, slices and collapsible failure examples. Every piece
of text from a checklist or a model goes through ``html.escape``.
"""

from __future__ import annotations

from html import escape
from typing import Any

from pytest_vlcheck.report import fmt
from pytest_vlcheck.report.matrix import (
    Matrix,
    Row,
    build_matrix,
    measured_rate,
    status_counts,
)
from pytest_vlcheck.report.svg import bar_chart, model_colour, radar_chart
from pytest_vlcheck.tasks import TASKS

__all__ = ["render_html", "true_marks"]

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827;
  margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #e5e7eb; }
h3 { font-size: 15px; margin: 24px 0 4px; }
table { border-collapse: collapse; margin: 8px 0 12px; }
th, td { border: 1px solid #e5e7eb; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 12px; background: #f3f4f6; padding: 0 3px; border-radius: 3px; }
.matrix td.cell { text-align: center; white-space: nowrap; }
.matrix small, .meta { color: #4b5563; }
.st-passed { background: #dcf2dc; } .st-failed { background: #f8d7da; }
.st-error { background: #fde8c8; } .st-skipped { background: #eceff1; color: #4b5563; }
.st-missing { color: #9ca3af; }
figure { margin: 12px 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
svg.chart { max-width: 100%; height: auto; }
details { margin: 6px 0; } summary { cursor: pointer; font-weight: 600; }
.example { border-left: 3px solid #d1d5db; padding: 2px 0 2px 10px; margin: 10px 0; }
.scores td.true, .scores th.true { background: #dcf2dc; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
"""

_MARK = {"passed": "✓", "failed": "✗", "error": "ERROR", "skipped": "skip"}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _table(header: list[str], rows: list[list[str]], cls: str = "") -> list[str]:
    """Cells are already HTML; ``header`` likewise."""
    attr = f' class="{cls}"' if cls else ""
    out = [f"<table{attr}>", "<tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>"]
    out += ["<tr>" + "".join(row) + "</tr>" for row in rows]
    out.append("</table>")
    return out


def _td(text: str, cls: str = "", title: str = "") -> str:
    attrs = (f' class="{cls}"' if cls else "") + (f' title="{_e(title)}"' if title else "")
    return f"<td{attrs}>{text}</td>"


def _row_id(index: int) -> str:
    return f"t{index + 1}"


def _models_section(matrix: Matrix, results: list[dict[str, Any]]) -> list[str]:
    counts = status_counts(matrix.models, results)
    rows = []
    for i, m in enumerate(matrix.models):
        c = counts[m["name"]]
        swatch = f'<span class="swatch" style="background:{model_colour(i)}"></span>'
        rows.append(
            [
                _td(swatch + _e(m["name"])),
                _td(f"<code>{_e(m.get('spec') or '-')}</code>"),
                _td(f"<code>{_e(m.get('fingerprint') or '-')}</code>"),
                *(_td(str(c[s]), "num") for s in ("passed", "failed", "error", "skipped")),
            ]
        )
    header = ["model", "spec", "fingerprint", "passed", "failed", "error", "skipped"]
    return ["<h2>Models</h2>", *_table(header, rows)]


def _matrix_cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return _td("-", "cell st-missing", "not run")
    status = result["status"]
    if status in ("error", "skipped"):
        return _td(_MARK[status], f"cell st-{status}", status)
    ci = fmt.ci(result["ci_low"], result["ci_high"]) if result["n"] else fmt.MISSING
    text = (
        f"{fmt.pct(measured_rate(result))} {_MARK[status]}<br><small>{ci} · n={result['n']}</small>"
    )
    return _td(
        text, f"cell st-{status}", f"{status}: 95% CI {ci}, {result['passed']}/{result['n']}"
    )


def _matrix_section(matrix: Matrix) -> list[str]:
    names = matrix.model_names
    header = ["capability", "test", "threshold", *(_e(n) for n in names)]
    rows = []
    for i, row in enumerate(matrix.rows):
        threshold = row.shared("threshold")
        rows.append(
            [
                _td(f'<a href="#{_row_id(i)}">{_e(row.label)}</a>'),
                _td(f"<code>{_e(row.test_id)}</code>"),
                _td(fmt.pct(threshold) if threshold is not None else "-", "num"),
                *(_matrix_cell(row.cells.get(n)) for n in names),
            ]
        )
    return ["<h2>Capability matrix</h2>", *_table(header, rows, "matrix")]


def _charts_section(matrix: Matrix) -> list[str]:
    out = ["<h2>Pass rates</h2>"]
    for name in matrix.model_names:
        out += ["<figure>", f"<figcaption>{_e(name)}</figcaption>", bar_chart(matrix, name)]
        out.append("</figure>")
    radar = radar_chart(matrix)
    if radar is not None:
        out += ["<h2>Capabilities</h2>", "<figure>", radar, "</figure>"]
    return out


def true_marks(
    task: str, n_images: int, n_texts: int
) -> tuple[set[int], set[int], set[tuple[int, int]]]:
    """Which texts, images and (image, text) cells are the true ones in a failure example
    (the task kind says; an unknown kind from a newer writer marks nothing)."""
    if task not in TASKS:
        return set(), set(), set()
    return TASKS[task].true_marks(n_images, n_texts)


def _score_at(scores: list[list[Any]], i: int, j: int) -> float | int | None:
    if i < len(scores) and j < len(scores[i]):
        return scores[i][j]
    return None


def _example(task: str, example: dict[str, Any]) -> list[str]:
    images, texts, scores = example["images"], example["texts"], example["scores"]
    true_texts, true_images, true_cells = true_marks(task, len(images), len(texts))
    detail = f" — {_e(example['detail'])}" if example["detail"] else ""
    out = ['<div class="example">', f"<p><b>{_e(example['id'] or 'example')}</b>{detail}</p>"]
    header = ["text \\ image"]
    for i, ref in enumerate(images):
        mark = "✓ " if i in true_images else ""
        cls = ' class="true"' if i in true_images else ""
        header.append(f"<span{cls}>{mark}<code>{_e(ref)}</code></span>")
    rows = []
    for j, text in enumerate(texts):
        is_true = j in true_texts
        cells = [_td(("✓ " if is_true else "") + _e(text), "true" if is_true else "")]
        for i in range(len(images)):
            value = _score_at(scores, i, j)
            cls = "num true" if (i, j) in true_cells else "num"
            cells.append(_td(fmt.score(value), cls, "" if value is None else repr(value)))
        rows.append(cells)
    out += _table(header, rows, "scores")
    out.append("</div>")
    return out


def _failures(row: Row, names: list[str]) -> list[str]:
    out = []
    for name in names:
        result = row.cells.get(name)
        if result is None or not result["failures"]:
            continue
        failing = result["n"] - result["passed"]
        shown = len(result["failures"])
        out.append("<details>")
        out.append(
            f"<summary>{_e(name)}: {shown} failure example{'s' if shown != 1 else ''} "
            f"(of {failing} failing, {_e(result['status'])})</summary>"
        )
        for example in result["failures"]:
            out += _example(result["task"], example)
        out.append("</details>")
    return out


def _slices(row: Row, present: list[str]) -> list[str]:
    out = []
    tags = list(dict.fromkeys(t for n in present for t in row.cells[n]["slices"]))
    for tag in tags:
        values = list(
            dict.fromkeys(v for n in present for v in row.cells[n]["slices"].get(tag, {}))
        )
        rows = []
        for value in values:
            cells = [_td(_e(value))]
            for n in present:
                s = row.cells[n]["slices"].get(tag, {}).get(value)
                text = "-" if s is None else f"{fmt.pct(s['pass_rate'])} ({s['passed']}/{s['n']})"
                cells.append(_td(text, "num"))
            rows.append(cells)
        out += [f"<p>Slice by <b>{_e(tag)}</b></p>", *_table([_e(tag), *map(_e, present)], rows)]
    return out


def _test_section(index: int, row: Row, names: list[str]) -> list[str]:
    present = [n for n in names if n in row.cells]
    first = row.cells[present[0]]
    facts = [f"<code>{_e(row.test_id)}</code>", f"task {_e(first['task'])}"]
    if first["criterion"]:
        facts.append(f"criterion {_e(first['criterion'])}")
    chance = row.shared("chance")
    if chance is not None:
        facts.append(f"chance {fmt.pct(chance)}")
    elif first.get("chance", 0) is None:
        facts.append("no chance level")
    out = [
        f'<section id="{_row_id(index)}">',
        f"<h3>{_e(row.label)}</h3>",
        f'<p class="meta">{" · ".join(facts)}</p>',
    ]
    header = ["model", "status", "n", "passed", "pass rate", "95% CI", "threshold", "unscored"]
    rows = []
    for n in present:
        r = row.cells[n]
        unscored = ", ".join(f"{_e(k)}: {v}" for k, v in r["unscored"].items()) or "-"
        rows.append(
            [
                _td(_e(n)),
                _td(_e(r["status"]), f"st-{r['status']}"),
                _td(str(r["n"]), "num"),
                _td(str(r["passed"]), "num"),
                _td(fmt.pct(measured_rate(r)), "num"),
                _td(fmt.ci(r["ci_low"], r["ci_high"]) if r["n"] else fmt.MISSING, "num"),
                _td(fmt.pct(r["threshold"]), "num"),
                _td(unscored),
            ]
        )
    out += _table(header, rows)
    notes = [(n, row.cells[n]["message"]) for n in present if row.cells[n].get("message")]
    if notes:
        out.append("<ul>")
        out += [f"<li><b>{_e(n)}</b>: {_e(message)}</li>" for n, message in notes]
        out.append("</ul>")
    metric_names = list(dict.fromkeys(k for n in present for k in row.cells[n]["metrics"]))
    if metric_names:
        rows = [
            [_td(_e(k)), *(_td(fmt.value(row.cells[n]["metrics"].get(k)), "num") for n in present)]
            for k in metric_names
        ]
        out += _table(["metric", *map(_e, present)], rows)
    out += _slices(row, present)
    out += _failures(row, present)
    out.append("</section>")
    return out


def render_html(models: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """The whole ``report.html`` text (deterministic; no timestamps, no external resources)."""
    matrix = build_matrix(models, results)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>vlcheck report</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<h1>vlcheck capability report</h1>",
        *_models_section(matrix, results),
    ]
    if matrix.rows:
        out += _matrix_section(matrix)
        out += _charts_section(matrix)
        out.append("<h2>Tests</h2>")
        for i, row in enumerate(matrix.rows):
            out += _test_section(i, row, matrix.model_names)
    else:
        out.append("<p>No results.</p>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
