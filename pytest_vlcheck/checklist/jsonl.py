"""Examples kept in a JSON Lines file (``examples: color.jsonl``): one example per line.

Large tests (100,000 examples from an importer) parse far faster from JSON Lines than from
YAML, and a line is a natural error location. Each object is a plain ``dict`` given with its
line: the loader's validation (``Fields`` with that line as the fallback) reports
``FILE.jsonl:LINE`` for every problem, as for every key of the line.

A line that is one flat-enough object is decoded by the JSON scanner alone, its repeated keys
ruled out by counting colons (below); any other line goes through the exact decoder, which
words the line's error. A task kind may build the examples of a file whose every line has its
plain shape directly (``Task.parse_plain_examples``: the caption kind does); any other file,
or one with any doubtful line, goes through the loader's full validation, so every error is
still the precise ``FILE.jsonl:LINE`` message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_vlcheck.nesting import MAX_NESTING, TOO_DEEP, json_too_deep
from pytest_vlcheck.parsing.errors import ChecklistError
from pytest_vlcheck.parsing.fields import type_name

SUFFIX = ".jsonl"
_JSON_SPACE = " \t\r"
"""What JSON allows after a value on a line (``\n`` ends it)."""


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


def load_jsonl_examples(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """The example objects of ``path`` and their 1-based lines; blank lines are skipped.

    Raises ``ChecklistError`` at the line of the first line that is not one JSON object.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ChecklistError(path, 1, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data, exc) from None
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates)
    # the C scanner: plain dicts, no per-object Python call (typeshed does not list it)
    scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
    examples: list[dict[str, Any]] = []
    lines: list[int] = []
    pieces = text.split("\n")
    for number, line in enumerate(pieces, start=1):
        value = _scanned(line, scan) if line[:1] == "{" else None
        if value is None:
            if not line.strip():
                continue
            # the exact decoder, on the line as the file has it (its newline, if any)
            value = _example(path, number, line + "\n" * (number < len(pieces)), decoder)
        examples.append(value)
        lines.append(number)
    if not examples:
        raise ChecklistError(path, 1, "no examples; expected one JSON object per line")
    return examples, lines


def _scanned(line: str, scan: Any) -> dict[str, Any] | None:
    """The object ``line`` holds when it is surely one valid object with no repeated key;
    None when the exact decoder must decide (and word the error, if any).

    A key's pair is its key, one ``:`` and its value, so a line with as many ``:`` as its
    objects have keys has no repeated key (a repeat is one key fewer) and no ``:`` in a
    string; brackets no more than ``MAX_NESTING`` cannot nest too deep.
    """
    opened = line.count("{")
    if opened + line.count("[") > MAX_NESTING:
        return None
    try:
        value, end = scan(line, 0)
    except (json.JSONDecodeError, StopIteration):
        return None
    if end != len(line) and line[end:].strip(_JSON_SPACE):
        return None
    keys = len(value) if opened == 1 else _key_count(value)
    return value if line.count(":") == keys else None


def _key_count(value: Any) -> int:
    """The keys of every object in ``value``, nested ones included."""
    if type(value) is dict:
        return len(value) + sum(_key_count(item) for item in value.values())
    if type(value) is list:
        return sum(_key_count(item) for item in value)
    return 0


def _not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError) -> ChecklistError:
    """The first problem of a file that is not all UTF-8, in file order: an earlier line's
    JSON error, else the bad byte's line (a newline is never part of a multi-byte character,
    so the whole file's reason is that line's own)."""
    bad = data.count(b"\n", 0, exc.start) + 1
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates)
    for number, raw in enumerate(data.split(b"\n", bad - 1)[: bad - 1], start=1):
        text = raw.decode("utf-8") + "\n"
        if text.strip():
            _example(path, number, text, decoder)
    return ChecklistError(path, bad, f"not UTF-8 text: {exc.reason}")


def _example(path: Path, number: int, text: str, decoder: json.JSONDecoder) -> dict[str, Any]:
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
    return value
