"""The ``vlcheck`` command: validate checklists, import benchmarks, render scenes, re-render
reports.

Each subcommand registers itself on the parser and sets ``handler(args) -> exit code``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_vlcheck.checklist import ChecklistError, is_checklist_file, load_checklist


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.handler(args))


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    from pytest_vlcheck.importers.command import add_import_command
    from pytest_vlcheck.render_command import add_render_command

    parser = argparse.ArgumentParser(
        prog="vlcheck", description="Vision-language capability checklists: validate, import, "
                                    "render and report.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_validate_command(subparsers)
    add_import_command(subparsers)
    add_render_command(subparsers)
    _add_report_command(subparsers)
    return parser


def _add_validate_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate", help="check checklist files and print what they hold",
        description="Load every checklist (files, or folders searched for YAML files opening "
                    "with 'vlcheck:') and report FILE:LINE errors; no model is loaded.")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--image-root", type=Path, default=None,
                        help="resolve image paths here (like --vl-image-root)")
    parser.set_defaults(handler=_validate)


def _checklist_paths(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from (p for p in sorted(path.rglob("*.y*ml")) if is_checklist_file(p))
        else:
            yield path


def _validate(args: argparse.Namespace) -> int:
    failures = 0
    found = 0
    for path in _checklist_paths(args.paths):
        found += 1
        try:
            checklist = load_checklist(path, image_root=args.image_root)
        except ChecklistError as exc:
            print(exc, file=sys.stderr)
            failures += 1
            continue
        examples = sum(len(test.examples) for test in checklist.tests)
        print(f"{path}: {len(checklist.tests)} tests, {examples} examples")
    if not found:
        print("vlcheck validate: no checklist files found", file=sys.stderr)
        return 2
    return 1 if failures else 0


def _add_report_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="re-render matrix.md, matrix.csv and report.html from a matrix.json",
        description="Every number in the report files is rendered from matrix.json alone.")
    parser.add_argument("matrix", type=Path, help="a matrix.json written by --vl-report")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="folder for the files (default: the matrix.json's folder)")
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from pytest_vlcheck.report import ReportFormatError, read_matrix, write_report

    try:
        models, results = read_matrix(args.matrix)
    except (ReportFormatError, OSError) as exc:
        print(f"vlcheck report: {exc}", file=sys.stderr)
        return 2
    directory = args.output or args.matrix.parent
    directory.mkdir(parents=True, exist_ok=True)
    for path in write_report(directory, models, results):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
