"""The one bound on how deeply the files vlcheck reads may nest lists and mappings.

Python's parsers recurse once per level, so a file nested a few thousand levels deep (a
truncated download, a hostile input) would end in a ``RecursionError`` traceback. No format
the tool reads (checklist YAML, JSONL examples, ``scores:`` files, baselines, ``matrix.json``,
``samples.jsonl``) needs more than a handful of levels, so every reader refuses a file nested
deeper than ``MAX_NESTING``: JSON texts are scanned before parsing (``json_too_deep``, which
also finds the line), the YAML loader counts levels as it builds them. Each reader raises its
own error with ``TOO_DEEP`` as the message.
"""

from __future__ import annotations

import re

__all__ = ["MAX_NESTING", "TOO_DEEP", "json_too_deep"]

MAX_NESTING = 64
"""Levels of lists and mappings a file may nest; vlcheck's own formats use fewer than 10."""

TOO_DEEP = (
    f"nested too deep: more than {MAX_NESTING} levels of lists and mappings; "
    f"expected at most {MAX_NESTING}"
)

_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
"""A JSON string (escapes included); none spans a line, so removing them keeps line numbers."""
_BRACKET = re.compile(r"[\[\]{}]")


def json_too_deep(text: str | bytes) -> int | None:
    """The 1-based line where JSON ``text`` first nests deeper than ``MAX_NESTING``, or None.

    Cheap on what real files hold: when the text has no more opening brackets than the bound
    it cannot be too deep and nothing is scanned; otherwise strings are removed (a bracket
    inside one is text) and the brackets are counted in one pass.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return None
    plain = _STRING.sub("", text)
    depth = 0
    for match in _BRACKET.finditer(plain):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_NESTING:
            return plain.count("\n", 0, match.start()) + 1
    return None
