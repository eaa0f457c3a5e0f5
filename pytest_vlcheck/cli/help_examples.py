"""Example commands at the foot of each subcommand's ``--help``, kept as written (argparse
would wrap them into one paragraph) while descriptions are still wrapped."""

from __future__ import annotations

import argparse
from typing import Any

HEADING = "examples:"


class _KeepExamples(argparse.HelpFormatter):
    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(HEADING):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def with_examples(*commands: str) -> dict[str, Any]:
    """``add_parser`` keywords: an epilog listing ``commands``, one per line."""
    epilog = "\n".join([HEADING, *(f"  {command}" for command in commands)])
    return {"epilog": epilog, "formatter_class": _KeepExamples}
