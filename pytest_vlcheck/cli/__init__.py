"""The ``vlcheck`` command: one module per subcommand.

Each subcommand module has ``add_*_command(subparsers)``, which registers its parser and sets
``handler(args) -> exit code``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pytest_vlcheck.errors import VlcheckUserError

PIPE_CLOSED = 141
"""The status of a command whose reader went away (``vlcheck ... | head``): 128 + SIGPIPE,
what a shell reports for a program that signal stopped."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    given = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(plugin_formats=given[:1] == ["import"])
    args = parser.parse_args(given)
    try:
        return int(args.handler(args))
    except VlcheckUserError as exc:  # a handler's own checks say it better; this is the net
        print(f"vlcheck {args.command}: {exc.render()}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # Nobody reads the rest: no traceback, and no second error when Python flushes
        # stdout at exit (its descriptor now points at /dev/null).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return PIPE_CLOSED


def build_parser(plugin_formats: bool = True) -> argparse.ArgumentParser:
    """The parser with every subcommand; ``plugin_formats``: ``import`` also takes the
    formats installed packages register (imported for their options)."""
    from pytest_vlcheck.cli.audit import add_audit_command
    from pytest_vlcheck.cli.baseline import add_baseline_command
    from pytest_vlcheck.cli.compare import add_compare_command
    from pytest_vlcheck.cli.import_command import add_import_command
    from pytest_vlcheck.cli.merge import add_merge_command
    from pytest_vlcheck.cli.render import add_render_command
    from pytest_vlcheck.cli.report import add_report_command
    from pytest_vlcheck.cli.schema import add_schema_command
    from pytest_vlcheck.cli.validate import add_validate_command
    from pytest_vlcheck.cli.watch import add_watch_command

    parser = argparse.ArgumentParser(
        prog="vlcheck",
        description="Vision-language capability checklists: validate, import, render and report.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_validate_command(subparsers)
    add_import_command(subparsers, plugin_formats)
    add_render_command(subparsers)
    add_report_command(subparsers)
    add_audit_command(subparsers)
    add_schema_command(subparsers)
    add_compare_command(subparsers)
    add_baseline_command(subparsers)
    add_merge_command(subparsers)
    add_watch_command(subparsers)
    return parser
