"""The ``vlcheck`` command: one module per subcommand.

Each subcommand module has ``add_*_command(subparsers)``, which registers its parser and sets
``handler(args) -> exit code``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.handler(args))


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    from pytest_vlcheck.cli.audit import add_audit_command
    from pytest_vlcheck.cli.baseline import add_baseline_command
    from pytest_vlcheck.cli.compare import add_compare_command
    from pytest_vlcheck.cli.import_command import add_import_command
    from pytest_vlcheck.cli.merge import add_merge_command
    from pytest_vlcheck.cli.render import add_render_command
    from pytest_vlcheck.cli.report import add_report_command
    from pytest_vlcheck.cli.schema import add_schema_command
    from pytest_vlcheck.cli.validate import add_validate_command

    parser = argparse.ArgumentParser(
        prog="vlcheck",
        description="Vision-language capability checklists: validate, import, render and report.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_validate_command(subparsers)
    add_import_command(subparsers)
    add_render_command(subparsers)
    add_report_command(subparsers)
    add_audit_command(subparsers)
    add_schema_command(subparsers)
    add_compare_command(subparsers)
    add_baseline_command(subparsers)
    add_merge_command(subparsers)
    return parser
