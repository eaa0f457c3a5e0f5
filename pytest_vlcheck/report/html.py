"""``report.html``: one self-contained page (inline CSS and SVG, no scripts, no web assets).

A formatter over ``sections.Report``. Sections: a headline with the verdict and the counts,
the run's errors (first, so nobody misses them), the matrix coloured by verdict with deltas
against the baseline and the first model (its marks explained under it; one line a cell, so
README's 20 tests fit a 1280 x 900 window with the headline), the models, pass-rate
charts per model, the capability radar, then per test (failing tests first) its numbers,
metrics, slices side by side and collapsible failure examples (with their thumbnails when the
caller passes them as data URIs; the scores once, in the example's table). Every piece of
text from a checklist or a model goes through ``html.escape``.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.decision import FLIPPED_SHOWN
from pytest_vlcheck.report.image_labels import image_label, shorten_scenes
from pytest_vlcheck.report.prior_view import prior_html
from pytest_vlcheck.report.sections import Cell, Delta, Failures, Report, Section, SliceTable
from pytest_vlcheck.report.svg import (
    bar_chart,
    curve_panels,
    model_colour,
    radar_chart,
)
from pytest_vlcheck.report.terminal import mark_legend, verdict_mark
from pytest_vlcheck.results import FailureExample
from pytest_vlcheck.results.blocks import GateComparison
from pytest_vlcheck.tasks import TASKS

__all__ = ["CSS", "curve_figures", "render_html", "true_marks"]

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827;
  margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #e5e7eb; }
h3 { font-size: 15px; margin: 24px 0 4px; }
table { border-collapse: collapse; margin: 8px 0 12px; }
th, td { border: 1px solid #e5e7eb; padding: 3px 8px; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }
th { background: #f3f4f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 12px; background: #f3f4f6; padding: 0 3px; border-radius: 3px; }
.matrix td.cell { text-align: center; white-space: nowrap; }
.matrix small, .meta { color: #4b5563; }
.st-passed { background: #dcf2dc; } .st-failed { background: #f8d7da; }
.st-error { background: #fde8c8; } .st-skipped { background: #eceff1; color: #4b5563; }
.st-missing { color: #9ca3af; }
figure { margin: 12px 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
.panels { display: flex; flex-wrap: wrap; gap: 0 24px; }
svg.chart { max-width: 100%; height: auto; }
details { margin: 6px 0; } summary { cursor: pointer; font-weight: 600; }
.example { border-left: 3px solid #d1d5db; padding: 2px 0 2px 10px; margin: 10px 0; }
.scores td.true, .scores th.true { background: #dcf2dc; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.errors { border: 2px solid #d1495b; background: #fdf2f3; padding: 4px 16px; margin: 16px 0; }
.errors h2 { margin-top: 8px; border: none; color: #9b1c2c; }
.delta { display: block; font-size: 12px; }
.delta-drop { color: #b91c1c; font-weight: 700; } .delta-gain { color: #15803d; font-weight: 700; }
.matrix td.sig-drop { box-shadow: inset 0 0 0 2px #b91c1c; }
.matrix td.sig-gain { box-shadow: inset 0 0 0 2px #15803d; }
.slices { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.slices table { margin-top: 0; } .slices p { margin: 4px 0; }
.example-body { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.thumbs { display: flex; gap: 6px; } .thumbs figure { margin: 0; text-align: center; }
.thumbs img { max-width: 128px; max-height: 128px; border: 1px solid #d1d5db; }
.thumbs figcaption { font-weight: 400; font-size: 11px; color: #4b5563; }
.headline { font-size: 16px; padding: 8px 12px; border-radius: 4px; }
"""

_MARK = {
    "passed": "✓",
    "failed": "✗",
    "error": "ERROR",
    "skipped": "skip",
    "xfailed": "✗ xfail",
    "xpassed": "✓ XPASS",
}


SHOWN_FINGERPRINT = 24
"""Characters of a model's fingerprint the Models table shows (all of it on hover, and in
``matrix.json``): enough to tell checkpoints apart, short enough for a 1280-px window."""

_STATUS_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "xfailed": "failed, as expected",
    "xpassed": "passed, unexpectedly",
    "error": "errored",
    "skipped": "was skipped",
}


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


def _errors_section(report: Report) -> list[str]:
    """Collection errors and errored results with their messages, at the top of the page."""
    items = [f"<li><code>{_e(e.location)}</code>: {_e(e.message)}</li>" for e in report.errors]
    items += [
        f'<li><a href="#{s.anchor}"><code>{_e(s.test_id)}</code></a> [{_e(c.model)}]: '
        f"{_e(c.result.message or 'error (no message)')}</li>"
        for s, c in report.result_errors
    ]
    if not items:
        return []
    return ['<div class="errors">', "<h2>Errors</h2>", "<ul>", *items, "</ul>", "</div>"]


FAILING = ("failed", "error", "xpassed")
"""The statuses that fail a run (a known failure that failed, ``xfailed``, does not)."""


def _failing(section: Section) -> bool:
    return any(c.result.status in FAILING for c in section.cells)


def _headline(report: Report) -> list[str]:
    """The verdict in the first screen: passed or failed, how many results failed, per model
    its counts, and the models."""
    total = sum(c["total"] for c in report.counts.values())
    failing = sum(c.get(s, 0) for c in report.counts.values() for s in FAILING)
    failed = bool(failing or report.errors)
    verdict = "FAILED" if failed else "PASSED"
    what = f"{failing} of {fmt.plural(total, 'test x model result')} did not pass"
    if report.errors:
        what += f"; {fmt.plural(len(report.errors), 'file')} did not load"
    counts = "; ".join(
        f"{_e(name)}: "
        + ", ".join(f"{c[s]} {s}" for s in report.status_columns if c.get(s) or s == "passed")
        for name, c in report.counts.items()
    )
    return [
        f'<p class="headline st-{"failed" if failed else "passed"}"><b>{verdict}</b>: '
        f"{what} · {counts}</p>"
    ]


def _models_section(report: Report) -> list[str]:
    rows = []
    for i, m in enumerate(report.models):
        c = report.counts[m.name]
        swatch = f'<span class="swatch" style="background:{model_colour(i)}"></span>'
        rows.append(
            [
                _td(swatch + _e(m.name)),
                _td(f"<code>{_e(m.spec or '-')}</code>"),
                _td(_shortened(m.fingerprint or "-", SHOWN_FINGERPRINT)),
                *(_td(str(c[s]), "num") for s in report.status_columns),
            ]
        )
    header = ["model", "spec", "fingerprint", *report.status_columns]
    return ["<h2>Models</h2>", *_table(header, rows)]


def _shortened(text: str, width: int) -> str:
    """``text`` as code cut to ``width`` characters in its middle (a fingerprint's scheme
    and its hash's last digits stay), the whole of it on hover."""
    if len(text) <= width:
        return f"<code>{_e(text)}</code>"
    head = (width - 1) // 2
    short = text[:head] + "…" + text[len(text) - (width - 1 - head) :]
    return f'<code title="{_e(text)}">{_e(short)}</code>'


def _delta(d: Delta) -> str:
    cls = f"delta delta-{d.significance}" if d.significance else "delta"
    what = "base" if d.kind == "gate" else "vs " + d.against
    return f'<span class="{cls}" title="{_e(d.describe)}">{_e(d.marked)} {_e(what)}</span>'


def _matrix_cell(cell: Cell | None) -> str:
    if cell is None:
        return _td("-", "cell st-missing", "not run")
    r = cell.result
    unscored = (
        f"<br><small>{cell.unscored} unscored ({_e(cell.unscored_text)})</small>"
        if cell.unscored
        else ""
    )
    if r.status in ("error", "skipped"):
        return _td(_MARK[r.status] + unscored, f"cell st-{r.status}", r.message or r.status)
    mark = verdict_mark(r) + _MARK[r.status][1:]  # " xfail" / " XPASS" stay
    text = (
        f"{_e(cell.judged_text)} {mark} <small>{cell.ci_text} · n={r.n}</small>"
        + unscored
        + "".join(_delta(d) for d in cell.deltas)
    )
    cls = f"cell st-{r.status}" + (f" sig-{cell.significance}" if cell.significance else "")
    return _td(text, cls, f"{r.status}: 95% CI {cell.ci_text}, {r.passed}/{r.n}")


def _matrix_section(report: Report) -> list[str]:
    names = report.model_names
    header = ["capability", "test", "threshold", *(_e(n) for n in names)]
    rows = [
        [
            _td(f'<a href="#{s.anchor}">{_e(s.label)}</a>'),
            _td(f"<code>{_e(s.test_id)}</code>"),
            _td(fmt.pct(s.threshold) if s.threshold is not None else "-", "num"),
            *(_matrix_cell(s.cell(n)) for n in names),
        ]
        for s in report.sections
    ]
    out = ["<h2>Capability matrix</h2>", *_table(header, rows, "matrix")]
    legend = mark_legend(report)
    if legend is not None:
        out.append(f'<p class="meta">{_e(legend)}.</p>')
    if report.deltas:
        out.append(
            '<p class="meta">Deltas in points against the baseline (base) and the run\'s first '
            "model (vs NAME); ▼ red: a significant drop, ▲ green: a significant gain.</p>"
        )
    return out


def _charts_section(report: Report) -> list[str]:
    out = ["<h2>Pass rates</h2>"]
    for name in report.model_names:
        out += ["<figure>", f"<figcaption>{_e(name)}</figcaption>"]
        out += [bar_chart(report.matrix, name), "</figure>"]
    radar = radar_chart(report.matrix)
    if radar is not None:
        out += ["<h2>Capabilities</h2>", "<figure>", radar, "</figure>"]
    return out + _checkpoint_curves(report)


MIN_CURVE_POINTS = 3
"""Checkpoints of one glob needed for a curve (two points are a delta, shown in the matrix)."""


def _checkpoint_curves(report: Report) -> list[str]:
    """A capability curve per checkpoint glob of three or more files, in step order."""
    groups: dict[str, list[str]] = {}
    for model in report.matrix.models:
        if model.group:
            groups.setdefault(model.group, []).append(model.name)
    out = []
    for group, names in groups.items():
        if len(names) >= MIN_CURVE_POINTS:
            out.append(f"<h2>Capability curves: {_e(group)}</h2>")
            out += curve_figures(curve_panels(report.matrix, names, f"Pass rate ({group})"))
    return out


def curve_figures(panels: list[tuple[str, str]]) -> list[str]:
    """Small multiples side by side, one figure per capability group."""
    out = ['<div class="panels">']
    for group, chart in panels:
        out += ["<figure>", f"<figcaption>{_e(group)}</figcaption>", chart, "</figure>"]
    return [*out, "</div>"]


def true_marks(
    task: str, n_images: int, n_texts: int
) -> tuple[set[int], set[int], set[tuple[int, int]]]:
    """Which texts, images and (image, text) cells are the true ones in a failure example
    (the task kind says; an unknown kind from a newer writer marks nothing)."""
    if task not in TASKS:
        return set(), set(), set()
    return TASKS[task].true_marks(n_images, n_texts)


def _score_at(scores: list[list[float | None]], i: int, j: int) -> float | None:
    if i < len(scores) and j < len(scores[i]):
        return scores[i][j]
    return None


def _thumbnails(example: FailureExample, thumbnails: Mapping[str, str] | None) -> list[str]:
    """The example's images as ``<img>`` (data URIs from the caller), in image order."""
    if not thumbnails:
        return []
    out = []
    for i, name in enumerate(example.thumbnails):
        uri = thumbnails.get(name)
        if uri is None:
            continue
        ref = example.images[i] if i < len(example.images) else name
        out.append(
            f'<figure><img src="{_e(uri)}" alt="{_e(ref)}" loading="lazy">'
            f"<figcaption>image {i + 1}</figcaption></figure>"
        )
    return ['<div class="thumbs">', *out, "</div>"] if out else []


def _example(task: str, example: FailureExample, thumbnails: Mapping[str, str] | None) -> list[str]:
    images, texts, scores = example.images, example.texts, example.scores
    true_texts, true_images, true_cells = true_marks(task, len(images), len(texts))
    # the detail repeats the scores the table shows: only an example without them keeps it
    shown = example.detail and not any(scores)
    detail = f" — {_e(shorten_scenes(example.detail))}" if shown else ""
    out = ['<div class="example">', f"<p><b>{_e(example.id or 'example')}</b>{detail}</p>"]
    header = ["text \\ image"]
    for i, ref in enumerate(images):
        mark = "✓ " if i in true_images else ""
        cls = ' class="true"' if i in true_images else ""
        header.append(
            f'<span{cls} title="{_e(ref)}">{mark}<code>{_e(image_label(ref))}</code></span>'
        )
    rows = []
    for j, text in enumerate(texts):
        is_true = j in true_texts
        cells = [_td(("✓ " if is_true else "") + _e(text), "true" if is_true else "")]
        for i in range(len(images)):
            value = _score_at(scores, i, j)
            cls = "num true" if (i, j) in true_cells else "num"
            cells.append(_td(fmt.score(value), cls, "" if value is None else repr(value)))
        rows.append(cells)
    out += [
        '<div class="example-body">',
        *_thumbnails(example, thumbnails),
        *_table(header, rows, "scores"),
        "</div>",
        "</div>",
    ]
    return out


def _failures(failures: Failures, thumbnails: Mapping[str, str] | None) -> list[str]:
    shown = len(failures.examples)
    examples = fmt.plural(failures.failing, "failing example")
    if shown < failures.failing:
        examples = f"{shown} of {examples} shown"
    out = [
        "<details open>" if failures.status == "failed" else "<details>",
        f"<summary>{_e(failures.model)}: {examples} (the test {_STATUS_WORDS[failures.status]})"
        "</summary>",
    ]
    for example in failures.examples:
        out += _example(failures.task, example, thumbnails)
    out.append("</details>")
    return out


_SIDES = (("baseline", "at the baseline"), ("now", "now"))


def _grid(rows: list[list[Any]]) -> str:
    """``0.6000 0.4000`` per image row, rows joined by `` / ``."""
    return " / ".join(" ".join(fmt.score(x) for x in row) for row in rows)


def _flipped(task: str, cell: Cell, thumbnails: Mapping[str, str] | None) -> list[str]:
    """The examples lost and gained since the baseline (the first ``FLIPPED_SHOWN`` of each),
    so a reviewer sees what the checkpoint forgot: a lost one the report kept as a failing
    example with its texts, images and scores, any other by its id; then its scores today
    and, where the baseline saved them, before (the gate block's ``scores``)."""
    g = cell.result.gate
    if not isinstance(g, GateComparison) or not (g.lost or g.gained):
        return []
    kept = {f.id: f for f in cell.result.failures}
    out = [
        "<details>",
        f"<summary>{_e(cell.model)}: {g.b} lost, {g.c} gained since the baseline "
        f"({_e(g.baseline_model)})</summary>",
    ]
    for what, ids in (("lost", g.lost), ("gained", g.gained)):
        if not ids:
            continue
        more = f" (first {FLIPPED_SHOWN} of {len(ids)})" if len(ids) > FLIPPED_SHOWN else ""
        out.append(f"<p>{what}{more}:</p>")
        for example in ids[:FLIPPED_SHOWN]:
            if example in kept:
                out += _example(task, kept[example], thumbnails)
            else:
                out.append(f'<p class="example"><b>{_e(example)}</b></p>')
            sides = g.scores.get(example, {})
            said = [f"{when} {_grid(sides[side])}" for side, when in _SIDES if side in sides]
            if said:
                out.append(f'<p class="meta">scores {_e("; ".join(said))}</p>')
    out.append("</details>")
    return out


def _slices(table: SliceTable, models: list[str]) -> list[str]:
    rows = [
        [_td(_e(value)), *(_td(table.text(c), "num") for c in cells)]
        for value, cells in zip(table.values, table.cells, strict=True)
    ]
    return [
        '<div class="slice">',
        f"<p>Slice by <b>{_e(table.tag)}</b></p>",
        *_table([_e(table.tag), *map(_e, models)], rows),
        "</div>",
    ]


def _result_rows(section: Section) -> list[list[str]]:
    return [
        [
            _td(_e(c.model)),
            _td(_e(c.result.status), f"st-{c.result.status}"),
            _td(str(c.result.n), "num"),
            _td(str(c.result.passed), "num"),
            _td(fmt.pct(c.rate), "num"),
            _td(c.ci_text, "num"),
            _td(fmt.pct(c.result.threshold), "num"),
            _td(_e(c.unscored_text)),
        ]
        for c in section.cells
    ]


def _test_section(section: Section, thumbnails: Mapping[str, str] | None) -> list[str]:
    facts = [f"<code>{_e(section.test_id)}</code>", f"task {_e(section.task)}"]
    if section.criterion:
        facts.append(f"criterion {_e(section.criterion)}")
    if section.chance_text:
        facts.append(section.chance_text)
    out = [
        f'<section id="{section.anchor}">',
        f"<h3>{_e(section.label)}</h3>",
        f'<p class="meta">{" · ".join(facts)}</p>',
    ]
    header = ["model", "status", "n", "passed", "pass rate", "95% CI", "threshold", "unscored"]
    out += _table(header, _result_rows(section))
    notes = [f"<li><b>{_e(n)}</b>: {_e(message)}</li>" for n, message in section.messages]
    notes += [
        f'<li><b>{_e(c.model)}</b>: <span class="delta-{d.significance or "none"}">'
        f"{_e(d.describe)}</span></li>"
        for c in section.cells
        for d in c.deltas
    ]
    if notes:
        out += ["<ul>", *notes, "</ul>"]
    for cell in section.cells:
        out += _flipped(section.task, cell, thumbnails)
    models = section.models
    if section.metric_names:
        rows = [
            [_td(_e(k)), *(_td(fmt.value(v), "num") for v in section.metric(k))]
            for k in section.metric_names
        ]
        out += _table(["metric", *map(_e, models)], rows)
    out += prior_html(section.priors)
    if section.slices:
        out.append('<div class="slices">')
        for table in section.slices:
            out += _slices(table, models)
        out.append("</div>")
    for failures in section.failures:
        out += _failures(failures, thumbnails)
    out.append("</section>")
    return out


def render_html(report: Report, *, thumbnails: Mapping[str, str] | None = None) -> str:
    """The whole ``report.html`` text (deterministic; no timestamps, no external resources).

    ``thumbnails`` maps a failure example's thumbnail file name to its data URI; without it
    the page shows no images.
    """
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>vlcheck report</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<h1>vlcheck capability report</h1>",
        *_headline(report),
        *_errors_section(report),
    ]
    if report.sections:
        out += _matrix_section(report)  # before the models: the verdict's table on screen one
        out += _models_section(report)
        out += _charts_section(report)
        out.append("<h2>Tests</h2>")
        out.append('<p class="meta">Failing tests first, then the rest in matrix order.</p>')
        ordered = sorted(report.sections, key=lambda section: not _failing(section))
        for section in ordered:
            out += _test_section(section, thumbnails)
    else:
        out += [*_models_section(report), "<p>No results.</p>"]
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
