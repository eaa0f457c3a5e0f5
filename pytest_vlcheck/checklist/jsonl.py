"""Examples kept in a JSON Lines file (``examples: color.jsonl``): one example per line.

Large tests (100,000 examples from an importer) parse far faster from JSON Lines than from
YAML, and a line is a natural error location. Each object becomes a ``LineMap`` carrying
its line, so the loader's usual validation reports ``FILE.jsonl:LINE`` for every problem.
Nested mappings (an image ``{path, crop}``) stay plain dicts: ``Fields`` falls back to
the line of the key that holds them, which is the same line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_vlcheck.checklist.errors import ChecklistError
from pytest_vlcheck.checklist.fields import type_name
from pytest_vlcheck.checklist.yaml_lines import LineMap

SUFFIX = ".jsonl"


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON allows repeated keys and keeps the last; a checklist treats that as a mistake."""
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
    example.key_lines = {}
    return example
