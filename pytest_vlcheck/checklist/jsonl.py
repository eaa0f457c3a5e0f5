"""Examples kept in a JSON Lines file (``examples: color.jsonl``): one example per line.

Large tests (100,000 examples from an importer) parse far faster from JSON Lines than from
YAML, and a line is a natural error location. Each object becomes a ``LineMap`` carrying
its line, so the loader's usual validation reports ``FILE.jsonl:LINE`` for every problem.
Nested mappings (an image ``{path, crop}``) stay plain dicts: ``Fields`` falls back to
the line of the key that holds them, which is the same line.

A task kind may build the examples of a file whose every line has its plain shape directly
(``Task.parse_plain_examples``: the caption kind does, about 3x faster for 100,000 lines);
any other file, or one with any doubtful line, goes through the loader's full validation, so
every error is still the precise ``FILE.jsonl:LINE`` message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_vlcheck.nesting import TOO_DEEP, json_too_deep
from pytest_vlcheck.parsing.errors import ChecklistError
from pytest_vlcheck.parsing.fields import type_name
from pytest_vlcheck.parsing.line_values import LineMap

SUFFIX = ".jsonl"
_NO_KEY_LINES: Mapping[str, int] = MappingProxyType({})
"""Every key of a line is on that line: one shared, empty table for every example."""


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON allows repeated keys and keeps the last; a checklist treats that as a mistake.
    (As an ``object_pairs_hook`` it costs less than ``json.loads`` and a check after.)"""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def load_jsonl_examples(path: Path) -> tuple[list[LineMap], list[int]]:
    """The example objects of ``path`` and their 1-based lines; blank lines are skipped.

    Raises ``ChecklistError`` at the line of the first line that is not one JSON object.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ChecklistError(path, 1, f"cannot read file: {exc.strerror or exc}") from None
    examples: list[LineMap] = []
    lines: list[int] = []
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ChecklistError(path, number, f"not UTF-8 text: {exc.reason}") from None
            if text.strip():
                examples.append(_example(path, number, text, decoder))
                lines.append(number)
    if not examples:
        raise ChecklistError(path, 1, "no examples; expected one JSON object per line")
    return examples, lines


def _example(path: Path, number: int, text: str, decoder: json.JSONDecoder) -> LineMap:
    if json_too_deep(text) is not None:
        raise ChecklistError(path, number, TOO_DEEP)
    try:
        value = decoder.decode(text)
    except _DuplicateKey as exc:
        raise ChecklistError(path, number, f"duplicate key '{exc}'") from None
    except json.JSONDecodeError as exc:
        raise ChecklistError(
            path,
            number,
            f"invalid JSON at column {exc.colno}: {exc.msg}; expected one example object per line",
        ) from None
    if not isinstance(value, dict):
        raise ChecklistError(
            path, number, f"each line must be one example (a JSON object), got {type_name(value)}"
        )
    example = LineMap(value)
    example.line = number
    example.key_lines = _NO_KEY_LINES
    return example
