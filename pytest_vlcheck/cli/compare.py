"""``vlcheck compare RUN RUN [RUN...] [-o DIR]``: pass rates of several runs side by side.

A RUN is a report folder (``matrix.json`` and, when present, ``samples.jsonl``), a
``matrix.json`` or a baseline file. Every model of every run is one column ("series"); the
first is the reference. Each other cell shows its delta in points and, where both sides have
per-example outcomes, the paired McNemar mid-p and its Holm-adjusted value (Holm over every
comparison in the table): ``report.comparison`` lays the table out and renders it. With
``-o DIR`` the table is also written as ``compare.md`` and a self-contained ``compare.html``;
with three or more series the HTML adds the capability curve.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from pytest_vlcheck import bounds
from pytest_vlcheck.atomic import atomic_write_text
from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_folder
from pytest_vlcheck.gates.baseline import Baseline, BaselineEntry
from pytest_vlcheck.gates.decision import DEFAULT_ALPHA, DEFAULT_MAX_DROP
from pytest_vlcheck.report.comparison import (
    ComparedRun,
    compare_runs,
    render_html,
    render_markdown,
    render_terminal,
)
from pytest_vlcheck.report.loader import ReportFormatError, validate_document
from pytest_vlcheck.results import CapabilityResult, ExampleOutcome
from pytest_vlcheck.results.json_checks import read_json
from pytest_vlcheck.results.samples import example_outcomes, read_samples

__all__ = ["add_compare_command", "load_run"]


def _results_from_matrix(path: Path, samples: Path | None) -> list[CapabilityResult]:
    doc = read_json(path, "a matrix.json report or a baseline", ReportFormatError)
    if isinstance(doc, dict) and "vlcheck_baseline" in doc:
        return [_from_entry(e) for e in Baseline.from_document(doc, str(path)).entries]
    _, results = validate_document(doc, str(path))
    outcomes = example_outcomes(read_samples(samples)) if samples is not None else {}
    return [replace(r, outcomes=outcomes.get((r.file, r.test, r.model), ())) for r in results]


def _from_entry(entry: BaselineEntry) -> CapabilityResult:
    """A baseline entry as the result it recorded (its verdict: the rate against its
    threshold), with its per-example outcomes."""
    numbers = entry.numbers
    rate, threshold = numbers["pass_rate"], numbers["threshold"]
    ok = rate is not None and (threshold is None or rate >= threshold)
    return CapabilityResult(
        file=entry.file,
        test=entry.test,
        capability=entry.capability,
        task=entry.task,
        model=entry.model,
        n=numbers["n"],
        passed=numbers["passed"],
        pass_rate=rate,
        ci_low=numbers["ci_low"],
        ci_high=numbers["ci_high"],
        threshold=threshold,
        chance=None,
        status="passed" if ok else "failed",
        outcomes=tuple(
            ExampleOutcome(i, c, False, [], entry.clusters.get(i, ""))
            for i, c in entry.outcomes.items()
        ),
    )


def load_run(path: Path) -> ComparedRun:
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
    return ComparedRun(name, tuple(results))


def add_compare_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
