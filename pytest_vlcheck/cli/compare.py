"""``vlcheck compare RUN RUN [RUN...] [-o DIR]``: pass rates of several runs side by side.

A RUN is a report folder (``matrix.json`` and, when present, ``samples.jsonl``), a
``matrix.json`` or a baseline file. Every model of every run is one column ("series"); the
first is the reference. Each other cell shows its delta in points and, where both sides have
per-example outcomes, the paired McNemar mid-p and its Holm-adjusted value (Holm over every
comparison in the table). With ``-o DIR`` the table is also written as ``compare.md`` and a
self-contained ``compare.html``; with three or more series the HTML adds the capability curve.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from pytest_vlcheck import bounds, fmt
from pytest_vlcheck.atomic import atomic_write_text
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_folder
from pytest_vlcheck.gates.baseline import Baseline
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP
from pytest_vlcheck.gates.wording import pvalue
from pytest_vlcheck.metrics.paired import change_mark, discordant_pairs, holm, mcnemar_midp
from pytest_vlcheck.report.html import _CSS, curve_figures
from pytest_vlcheck.report.loader import ReportFormatError, validate_document
from pytest_vlcheck.report.markdown import _table as md_table
from pytest_vlcheck.report.markdown import escape_md
from pytest_vlcheck.report.matrix import Matrix, build_matrix
from pytest_vlcheck.report.svg import curve_panels
from pytest_vlcheck.report.terminal import _line, _widths
from pytest_vlcheck.results.json_checks import read_json
from pytest_vlcheck.results.samples import outcomes_by_key, read_samples

__all__ = ["Comparison", "Run", "add_compare_command", "compare_runs", "load_run"]

MIN_CURVE_SERIES = 3


@dataclass(frozen=True)
class Run:
    """One RUN argument: a name and its results as matrix rows (plus ``outcomes`` or None)."""

    name: str
    results: list[dict[str, Any]]


def _results_from_matrix(path: Path, samples: Path | None) -> list[dict[str, Any]]:
    doc = read_json(path, "a matrix.json report or a baseline", ReportFormatError)
    if isinstance(doc, dict) and "vlcheck_baseline" in doc:
        return _results_from_baseline(Baseline.from_document(doc, str(path)))
    _, results = validate_document(doc, str(path))
    outcomes = outcomes_by_key(read_samples(samples)) if samples is not None else {}
    return [{**r, "outcomes": outcomes.get((r["file"], r["test"], r["model"]))} for r in results]


def _results_from_baseline(baseline: Baseline) -> list[dict[str, Any]]:
    results = []
    for e in baseline.entries:
        rate, threshold = e.numbers["pass_rate"], e.numbers["threshold"]
        ok = rate is not None and (threshold is None or rate >= threshold)
        results.append(
            {
                "file": e.file,
                "test": e.test,
                "model": e.model,
                "capability": e.capability,
                "task": e.task,
                **e.numbers,
                "status": "passed" if ok else "failed",
                "outcomes": dict(e.outcomes),
            }
        )
    return results


def load_run(path: Path) -> Run:
    """Read one RUN; raises ReportFormatError with a one-line message naming the path."""
    if path.is_dir():
        matrix, name = path / "matrix.json", path.resolve().name
        if not matrix.is_file():
            raise ReportFormatError(f"{path}: no matrix.json in this folder, expected a report")
    elif path.is_file():
        matrix = path
        name = path.resolve().parent.name if path.name == "matrix.json" else path.stem
    else:
        raise ReportFormatError(
            f"{path}: no such file or folder, expected a report folder, a matrix.json or a "
            "baseline file"
        )
    samples = matrix.parent / "samples.jsonl"
    try:
        results = _results_from_matrix(matrix, samples if samples.is_file() else None)
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFormatError(f"{matrix}: cannot read it: {exc}") from None
    return Run(name, results)


@dataclass(frozen=True)
class Comparison:
    """Series labels (the first is the reference), the matrix laid out over them, and the
    comparison of each non-reference cell: (delta points, mid-p or None, Holm p or None)."""

    series: list[str]
    matrix: Matrix
    deltas: dict[tuple[int, str], tuple[float | None, float | None, float | None]]
    alpha: float = DEFAULT_ALPHA
    max_drop_pts: float = DEFAULT_MAX_DROP

    @property
    def m(self) -> int:
        """The paired comparisons in the table: what alpha is divided by."""
        return sum(1 for _, p, _ in self.deltas.values() if p is not None)

    def mark(self, i: int, name: str) -> str:
        """``▼``, ``▲`` or nothing for one cell, by the gate's rule (``change_mark``)."""
        delta, p, _ = self.deltas[(i, name)]
        kind = change_mark(delta, p, self.m, alpha=self.alpha, max_drop_pts=self.max_drop_pts)
        return {"drop": "▼", "gain": "▲", "": ""}[kind]


def _series_labels(runs: list[Run]) -> list[list[str]]:
    """Per run, the label of each of its models: the run's name, or ``run:model``."""
    labels = []
    for run in runs:
        models = list(dict.fromkeys(r["model"] for r in run.results))
        labels.append([run.name] if len(models) == 1 else [f"{run.name}:{m}" for m in models])
    flat = [label for per_run in labels for label in per_run]
    if len(set(flat)) < len(flat):  # the same folder name twice: number the runs
        labels = [[f"{i + 1}:{lab}" for lab in per_run] for i, per_run in enumerate(labels)]
    return labels


def _paired(ref: dict[str, Any], other: dict[str, Any]) -> float | None:
    a, b = ref.get("outcomes"), other.get("outcomes")
    if not a or not b:
        return None
    matched, lost, gained = discordant_pairs(a, b)
    return mcnemar_midp(lost, gained) if matched else None


def compare_runs(
    runs: list[Run], *, alpha: float = DEFAULT_ALPHA, max_drop_pts: float = DEFAULT_MAX_DROP
) -> Comparison:
    """Lay the runs out as one matrix over their series and compare each with the first."""
    results = []
    series: list[str] = []
    for run, labels in zip(runs, _series_labels(runs), strict=True):
        models = list(dict.fromkeys(r["model"] for r in run.results))
        by_model = dict(zip(models, labels, strict=True))
        series += labels
        results += [{**r, "model": by_model[r["model"]]} for r in run.results]
    matrix = build_matrix([{"name": s} for s in series], results)
    raw: dict[tuple[int, str], tuple[float | None, float | None]] = {}
    for i, row in enumerate(matrix.rows):
        ref = row.cells.get(series[0])
        for name in series[1:]:
            cell = row.cells.get(name)
            if ref is None or cell is None:
                continue
            base, now = ref.get("pass_rate"), cell.get("pass_rate")
            delta = None if base is None or now is None else 100.0 * (now - base)
            raw[(i, name)] = (delta, _paired(ref, cell))
    paired = {k: p for k, (_, p) in raw.items() if p is not None}
    adjusted = dict(zip(paired, holm(list(paired.values())), strict=True))
    deltas = {k: (d, p, adjusted.get(k)) for k, (d, p) in raw.items()}
    return Comparison(series, matrix, deltas, alpha, max_drop_pts)


def _rate(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "-"
    return fmt.pct(cell.get("pass_rate") if cell.get("n") else None)


def cell_text(comparison: Comparison, i: int, name: str) -> str:
    """``45.0% -5.0 pts▼, p 0.0013, Holm 0.0052`` (the reference shows its rate only)."""
    text = _rate(comparison.matrix.rows[i].cells.get(name))
    if (i, name) not in comparison.deltas:
        return text
    delta, p, p_holm = comparison.deltas[(i, name)]
    if delta is not None:
        sign = "" if fmt.pct(delta / 100).startswith("-") else "+"
        text += f" {sign}{fmt.pct(delta / 100)[:-1]} pts{comparison.mark(i, name)}"
    if p is not None and p_holm is not None:
        text += f", p {pvalue(p)}, Holm {pvalue(p_holm)}"
    return text


def _table(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    header = ["capability", *comparison.series]
    body = [
        [row.label, *(cell_text(comparison, i, s) for s in comparison.series)]
        for i, row in enumerate(comparison.matrix.rows)
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
        f"Reference: {c.series[0]}. p: paired McNemar mid-p on examples matched by id. "
        f"▼/▲: p < alpha/m = {pvalue(c.alpha)}/{c.m} and a change of more than "
        f"{c.max_drop_pts:g} pts, the gate's rule (--alpha, --max-drop). Holm: the "
        f"Holm-adjusted p over the {c.m} paired comparisons, for information."
    )


def render_terminal(comparison: Comparison) -> list[str]:
    header, body = _table(comparison)
    widths = _widths(header, body)
    lines = [_line(header, widths), _line(["-" * w for w in widths], widths)]
    lines += [_line(cells, widths) for cells in body]
    return [*lines, "", _note(comparison)]


def render_markdown(comparison: Comparison) -> str:
    header, body = _table(comparison)
    table = md_table([escape_md(h) for h in header], [[escape_md(c) for c in r] for r in body])
    return "\n".join(["# vlcheck comparison", "", *table, "", escape_md(_note(comparison)), ""])


def render_html(comparison: Comparison) -> str:
    """A self-contained page: the table and, with three or more series, the capability curve."""
    header, body = _table(comparison)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8"><title>vlcheck comparison</title>',
        f"<style>{_CSS}</style></head>",
        "<body>",
        "<h1>vlcheck comparison</h1>",
        "<table>",
        "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>",
    ]
    out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in body]
    out += ["</table>", f'<p class="meta">{escape(_note(comparison))}</p>']
    if len(comparison.series) >= MIN_CURVE_SERIES:
        panels = curve_panels(comparison.matrix, comparison.series, "Pass rate")
        out += ["<h2>Capability curves</h2>", *curve_figures(panels)]
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def add_compare_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare pass rates of runs or checkpoints, with paired p-values",
        description="RUN: a report folder (matrix.json, samples.jsonl), a matrix.json or a "
        "baseline file. The first RUN is the reference.",
        **with_examples(
            "vlcheck compare reports/ckpt-1000 reports/ckpt-2000",
            "vlcheck compare base.json reports/new -o cmp --max-drop 1",
        ),
    )
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN")
    parser.add_argument(
        "-o", "--output", type=Path, default=None, help="write compare.md and compare.html here"
    )
    parser.add_argument(
        "--alpha",
        type=bounds.argument(bounds.finite_number, 0, 1, open_low=True, open_high=True),
        default=DEFAULT_ALPHA,
        help=f"significance level, divided by the comparisons shown (default {DEFAULT_ALPHA})",
    )
    parser.add_argument(
        "--max-drop",
        type=bounds.argument(bounds.finite_number, 0, bounds.MAX_DROP_PTS),
        default=DEFAULT_MAX_DROP,
        help=f"a change must exceed this many points to be marked (default {DEFAULT_MAX_DROP})",
    )
    parser.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        print("vlcheck compare: expected at least two RUNs to compare", file=sys.stderr)
        return 2
    try:
        if args.output is not None:
            check_output_folder(args.output)
        runs = [load_run(path) for path in args.runs]
    except (ReportFormatError, OutputPathError) as exc:
        print(f"vlcheck compare: {exc}", file=sys.stderr)
        return 2
    comparison = compare_runs(runs, alpha=args.alpha, max_drop_pts=args.max_drop)
    print("\n".join(render_terminal(comparison)))
    if args.output is not None:
        args.output.mkdir(exist_ok=True)
        atomic_write_text(args.output / "compare.md", render_markdown(comparison))
        atomic_write_text(args.output / "compare.html", render_html(comparison))
        print(args.output / "compare.md")
        print(args.output / "compare.html")
    return 0
