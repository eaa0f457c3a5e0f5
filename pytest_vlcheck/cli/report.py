"""``vlcheck report matrix.json``: re-render the report files from the JSON alone."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_folder


def add_report_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="re-render matrix.md, matrix.csv and report.html from a matrix.json",
        description="Every number in the report files is rendered from matrix.json alone.",
        **with_examples(
            "vlcheck report report/matrix.json", "vlcheck report report/matrix.json -o elsewhere/"
        ),
    )
    parser.add_argument("matrix", type=Path, help="a matrix.json written by --vl-report")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="folder for the files (default: the matrix.json's folder)",
    )
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from pytest_vlcheck.report import ReportFormatError, read_report, write_report
    from pytest_vlcheck.results.manifest import manifest_run, new_run_id, write_manifest, writing

    directory = args.output or args.matrix.parent
    try:
        check_output_folder(directory)
        doc = read_report(args.matrix)
    except (ReportFormatError, OutputPathError, OSError) as exc:
        print(f"vlcheck report: {exc}", file=sys.stderr)
        return 2
    run = manifest_run(args.matrix.parent) or new_run_id()
    with writing(directory):
        paths = write_report(
            directory,
            doc.models,
            doc.results,
            errors=doc.errors,
            thumbnail_source=args.matrix.parent,
            run_block=doc.run,
        )
        write_manifest(directory, [path.name for path in paths], run)
    for path in paths:
        print(path)
    return 0
