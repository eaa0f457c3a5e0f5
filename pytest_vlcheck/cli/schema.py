"""``vlcheck schema``: print the JSON Schema (draft 2020-12) of checklist files.

The schema ships in the package (``checklist/checklist.schema.json``) so editors can check
and complete checklists (``# yaml-language-server: $schema=PATH_OR_URL`` on a file's first
line); ``vlcheck validate`` remains the authority on what the loader accepts.
"""

from __future__ import annotations

import argparse
from importlib.resources import files

SCHEMA_RESOURCE = ("pytest_vlcheck.checklist", "checklist.schema.json")


def schema_text() -> str:
    """The shipped schema, as JSON text."""
    package, name = SCHEMA_RESOURCE
    return files(package).joinpath(name).read_text(encoding="utf-8")


def add_schema_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of checklist files",
        description="Print the JSON Schema (draft 2020-12) of checklist files, for editors "
        "and other tools; redirect it to a file to point yaml-language-server at it.",
    )
    parser.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    print(schema_text(), end="")
    return 0
