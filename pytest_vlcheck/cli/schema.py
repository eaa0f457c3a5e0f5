"""``vlcheck schema``: print the JSON Schema (draft 2020-12) of checklist files.

Editors check and complete checklists with it (``# yaml-language-server: $schema=PATH_OR_URL``
on a file's first line); it is built from the shipped common part and the task registry
(``checklist.json_schema``), and ``vlcheck validate`` remains the authority on what the
loader accepts.
"""

from __future__ import annotations

import argparse
import json
import sys

from pytest_vlcheck.checklist.json_schema import checklist_schema, schema_kinds
from pytest_vlcheck.cli.help_examples import with_examples


def schema_text() -> str:
    """The schema, as JSON text; an installed task kind that cannot be imported is left out,
    one line on stderr saying why."""
    kinds, broken = schema_kinds()
    for line in broken:
        print(f"vlcheck schema: {line}", file=sys.stderr)
    return json.dumps(checklist_schema(kinds), indent=2, ensure_ascii=False) + "\n"


def add_schema_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of checklist files",
        description="Print the JSON Schema (draft 2020-12) of checklist files, for editors "
        "and other tools; redirect it to a file to point yaml-language-server at it.",
        **with_examples("vlcheck schema > checklist.schema.json"),
    )
    parser.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    print(schema_text(), end="")
    return 0
