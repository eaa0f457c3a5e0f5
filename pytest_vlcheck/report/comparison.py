"""``vlcheck compare``'s table: several runs' results side by side, and its three views.

Every model of every run is one column ("series"); the first is the reference. The other
cells are compared with it by ``gates.reference`` (examples paired by id, McNemar mid-p,
Holm over every comparison of the table), printed with ``fmt.points`` and marked ▼/▲ by
``change_mark``: the gate's numbers, rounding and rule, so compare and the gate agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

from pytest_vlcheck import fmt
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP
from pytest_vlcheck.gates.reference import with_reference
from pytest_vlcheck.gates.wording import pvalue
from pytest_vlcheck.metrics.clustered import FEW_CLUSTERS, MIN_CLUSTERS
from pytest_vlcheck.metrics.paired import change_mark, flipped
from pytest_vlcheck.report.html import CSS, curve_figures
from pytest_vlcheck.report.markdown import escape_md, markdown_table
from pytest_vlcheck.report.matrix import Matrix, build_matrix
from pytest_vlcheck.report.svg import curve_panels
from pytest_vlcheck.report.terminal import plain_table
from pytest_vlcheck.results import CapabilityResult
from pytest_vlcheck.results.run_meta import ModelMeta

__all__ = [
    "ComparedRun",
    "Comparison",
    "compare_runs",
    "render_html",
    "render_markdown",
    "render_terminal",
]

MIN_CURVE_SERIES = 3
MARKS = {"drop": "▼", "gain": "▲", "": ""}


@dataclass(frozen=True)
class ComparedRun:
    """One RUN argument: its name and its results (with per-example outcomes where the run
    kept them: a report's ``samples.jsonl``, a baseline's entries)."""

    name: str
    results: tuple[CapabilityResult, ...]


@dataclass(frozen=True)
class Comparison:
    """Series labels (the first is the reference) and the matrix laid out over them, each
    non-reference result carrying its ``reference`` block (delta, mid-p, Holm p)."""

    series: list[str]
    matrix: Matrix
    alpha: float = DEFAULT_ALPHA
    max_drop_pts: float = DEFAULT_MAX_DROP

    @property
    def m(self) -> int:
        """The paired comparisons in the table: what alpha is divided by."""
        return sum(
            1
            for row in self.matrix.rows
            for r in row.cells.values()
            if r.reference is not None and r.reference.p_value is not None
        )

    def mark(self, result: CapabilityResult) -> str:
        """``drop``, ``gain`` or ``""`` for one cell, by the gate's rule (``change_mark``)."""
        ref = result.reference
        if ref is None:
            return ""
        return change_mark(
            ref.delta_pts, ref.p_value, self.m, alpha=self.alpha, max_drop_pts=self.max_drop_pts
        )


def _series_labels(runs: Sequence[ComparedRun]) -> list[list[str]]:
    """Per run, the label of each of its models: the run's name, or ``run:model``."""
    labels = []
    for run in runs:
        models = list(dict.fromkeys(r.model for r in run.results))
        labels.append([run.name] if len(models) == 1 else [f"{run.name}:{m}" for m in models])
    flat = [label for per_run in labels for label in per_run]
    if len(set(flat)) < len(flat):  # the same folder name twice: number the runs
        labels = [[f"{i + 1}:{lab}" for lab in per_run] for i, per_run in enumerate(labels)]
    return labels


def compare_runs(
    runs: Sequence[ComparedRun],
    *,
    alpha: float = DEFAULT_ALPHA,
    max_drop_pts: float = DEFAULT_MAX_DROP,
) -> Comparison:
    """Lay the runs out as one matrix over their series and compare each with the first."""
    results: list[CapabilityResult] = []
    series: list[str] = []
    for run, labels in zip(runs, _series_labels(runs), strict=True):
        models = list(dict.fromkeys(r.model for r in run.results))
        by_model = dict(zip(models, labels, strict=True))
        series += labels
        results += [replace(r, model=by_model[r.model], reference=None) for r in run.results]
    compared = with_reference(results, series)
    matrix = build_matrix([ModelMeta(s) for s in series], compared)
    return Comparison(series, matrix, alpha, max_drop_pts)


def _cell_parts(comparison: Comparison, result: CapabilityResult | None) -> tuple[str, str, str]:
    """(rate, ``-5.0 pts``, ``, p 0.0013, Holm 0.0052``); the mark goes between the last two."""
    if result is None:
        return "-", "", ""
    rate = fmt.pct(result.pass_rate if result.n else None)
    ref = result.reference
    if ref is None:
        return rate, "", ""
    if ref.test == FEW_CLUSTERS:
        p = ", too few clusters to test"
    elif ref.p_value is None or ref.p_holm is None:
        p = ""
    else:
        p = f", p {pvalue(ref.p_value)}, Holm {pvalue(ref.p_holm)}"
    return rate, f" {fmt.points(ref.delta_pts)} pts", p


def cell_text(comparison: Comparison, result: CapabilityResult | None) -> str:
    """``45.0% -5.0 pts▼, p 0.0013, Holm 0.0052`` (the reference shows its rate only)."""
    rate, delta, p = _cell_parts(comparison, result)
    mark = MARKS[comparison.mark(result)] if result is not None else ""
    return f"{rate}{delta}{mark}{p}"


def _table(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    header = ["capability", *comparison.series]
    body = [
        [row.label, *(cell_text(comparison, row.cells.get(s)) for s in comparison.series)]
        for row in comparison.matrix.rows
    ]
    return header, body


def _note(comparison: Comparison) -> str:
    c = comparison
    if not c.m:
        return (
            f"Reference: {c.series[0]}. No p-values and no ▼/▲: the runs carry no per-example "
            "outcomes to pair (give report folders with samples.jsonl, or baselines)."
        )
    return (
        f"Reference: {c.series[0]}. p: paired McNemar mid-p on examples matched by id, "
        "the gate's clustered mid-p where paired examples share an image or a cluster tag "
        f"(too few clusters to test: fewer than {MIN_CLUSTERS}, or every change in one). "
        f"▼/▲: p < alpha/m = {pvalue(c.alpha)}/{c.m} and a change of more than "
        f"{c.max_drop_pts:g} pts, the gate's rule (--alpha, --max-drop). Holm: the "
        f"Holm-adjusted p over the {c.m} paired comparisons, for information."
    )


FLIPPED_SHOWN = 5


def flipped_lines(comparison: Comparison) -> list[str]:
    """Per compared cell with examples lost or gained against the reference, the first
    ``FLIPPED_SHOWN`` ids of each, so a reader sees what changed, not only a count."""
    lines = []
    reference = comparison.series[0]
    for row in comparison.matrix.rows:
        first = row.cells.get(reference)
        if first is None:
            continue
        before = {o.id: o.correct for o in first.outcomes}
        for series in comparison.series[1:]:
            cell = row.cells.get(series)
            if cell is None or not cell.outcomes:
                continue
            _, lost, gained = flipped(before, {o.id: o.correct for o in cell.outcomes})
            parts = [
                f"{what} {len(ids)}: {', '.join(ids[:FLIPPED_SHOWN])}"
                + (" ..." if len(ids) > FLIPPED_SHOWN else "")
                for what, ids in (("lost", lost), ("gained", gained))
                if ids
            ]
            if parts:
                lines.append(f"{row.label} [{series}]: {'; '.join(parts)}")
    return lines


def render_terminal(comparison: Comparison) -> list[str]:
    """The table as fixed-width lines, what its marks mean, then the examples that flipped."""
    header, body = _table(comparison)
    flips = flipped_lines(comparison)
    heading = [f"Examples lost and gained against {comparison.series[0]}:"] if flips else []
    return [*plain_table(header, body), "", _note(comparison), *heading, *flips]


def render_markdown(comparison: Comparison) -> str:
    """``compare.md``."""
    header, body = _table(comparison)
    table = markdown_table(
        [escape_md(h) for h in header], [[escape_md(c) for c in r] for r in body]
    )
    return "\n".join(["# vlcheck comparison", "", *table, "", escape_md(_note(comparison)), ""])


def _html_cell(comparison: Comparison, result: CapabilityResult | None) -> str:
    """A cell whose ▼ is red and ▲ green, as in the report's matrix."""
    rate, delta, p = _cell_parts(comparison, result)
    kind = comparison.mark(result) if result is not None else ""
    mark = f'<span class="delta-{kind}">{MARKS[kind]}</span>' if kind else ""
    return f"<td>{escape(rate + delta)}{mark}{escape(p)}</td>"


def render_html(comparison: Comparison) -> str:
    """A self-contained page: the table and, with three or more series, the capability curve."""
    header = ["capability", *comparison.series]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8"><title>vlcheck comparison</title>',
        f"<style>{CSS}</style></head>",
        "<body>",
        "<h1>vlcheck comparison</h1>",
        "<table>",
        "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>",
    ]
    out += [
        "<tr>"
        + f"<td>{escape(row.label)}</td>"
        + "".join(_html_cell(comparison, row.cells.get(s)) for s in comparison.series)
        + "</tr>"
        for row in comparison.matrix.rows
    ]
    out += ["</table>", f'<p class="meta">{escape(_note(comparison))}</p>']
    if len(comparison.series) >= MIN_CURVE_SERIES:
        panels = curve_panels(comparison.matrix, comparison.series, "Pass rate")
        out += ["<h2>Capability curves</h2>", *curve_figures(panels)]
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
