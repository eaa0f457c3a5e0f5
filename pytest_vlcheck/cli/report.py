"""``vlcheck report matrix.json``: re-render the report files from the JSON alone; with
``--github``, write the matrix into GitHub Actions' job summary and print one error
annotation per failed test at its checklist line instead (``report.github``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_vlcheck.cli.help_examples import with_examples
from pytest_vlcheck.cli.output_paths import OutputPathError, check_output_folder


def add_report_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="re-render matrix.md, matrix.csv and report.html from a matrix.json",
        description="Every number in the report files is rendered from matrix.json alone.",
        **with_examples(
            "vlcheck report report/matrix.json",
            "vlcheck report report/matrix.json -o elsewhere/",
            "vlcheck report report/matrix.json --github  # in a GitHub Actions step",
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
    parser.add_argument(
        "--github",
        action="store_true",
        help="append the matrix to $GITHUB_STEP_SUMMARY and print an error annotation per "
        "failed test at its checklist FILE:LINE (no files written)",
    )
    parser.set_defaults(handler=_report)


def _github(matrix: Path) -> int:
    from pytest_vlcheck.report import ReportFormatError, read_report
    from pytest_vlcheck.report.github import error_annotations, job_summary

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    try:
        if not summary:
            raise ReportFormatError(
                "--github: GITHUB_STEP_SUMMARY is not set; expected a GitHub Actions step"
            )
        doc = read_report(matrix)
        with open(summary, "a", encoding="utf-8") as stream:
            stream.write(job_summary(doc) + "\n")
    except (ReportFormatError, OSError) as exc:
        print(f"vlcheck report: {exc}", file=sys.stderr)
        return 2
    for line in error_annotations(doc):
        print(line)
    return 0


def _report(args: argparse.Namespace) -> int:
    from pytest_vlcheck.report import ReportFormatError, read_report, write_report
    from pytest_vlcheck.results.manifest import manifest_run, new_run_id, write_manifest, writing

    if args.github:
        return _github(args.matrix)
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
