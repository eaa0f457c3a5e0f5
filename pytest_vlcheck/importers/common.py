"""Shared pieces of the importers: the importer record, source errors, names, chance levels.

Every importer turns benchmark files into checklist documents (plain dicts in the YAML
layout the loader reads). What they share lives here so the format modules only say what
is particular to their benchmark.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from pytest_vlcheck.nesting import TOO_DEEP, json_too_deep
from pytest_vlcheck.tasks import get_task

Document = dict[str, Any]
"""A checklist document: ``{"vlcheck": 1, "description": ..., "tests": [...]}``."""

Output = tuple[str | None, Document]
"""One output of an importer: a file-name suffix (``None`` for the single output) and its
document."""

FORMAT_VERSION = 1
_TEST_ID_BAD = re.compile(r"[^A-Za-z0-9_.-]+")
_SEGMENT_BAD = re.compile(r"[^a-z0-9_]+")


class SourceError(ValueError):
    """A problem in a benchmark file, located as ``FILE:LINE: message`` or
    ``FILE: record ID: message`` so the user can find it without a traceback."""

    def __init__(
        self, path: Path | str, message: str, *, line: int | None = None, record: object = None
    ) -> None:
        where = str(path)
        if line is not None:
            where = f"{where}:{line}"
        if record is not None:
            where = f"{where}: record {record}"
        super().__init__(f"{where}: {message}")
        self.path = Path(path)
        self.line = line
        self.record = record
        self.message = message


@dataclass(frozen=True)
class Importer:
    """One benchmark format of ``vlcheck import``.

    ``add_arguments`` declares the format's own options (on a group of the shared parser);
    ``convert`` reads the sources and returns the outputs to write. A benchmark whose images
    come from several datasets names them in ``image_sources``: ``--image-root NAME=DIR``
    then gives each its own folder (``args.image_roots``, NAME -> DIR written relative to
    the output's folder).
    """

    name: str
    summary: str
    add_arguments: Callable[[Any], None]
    convert: Callable[[list[Path], argparse.Namespace], list[Output]]
    image_sources: tuple[str, ...] = ()


def note(message: str) -> None:
    """Tell the user something they should know about the import (skipped records ...)."""
    print(f"vlcheck import: note: {message}", file=sys.stderr)


def note_unwinnable(path: Path, examples: Sequence[Mapping[str, Any]]) -> None:
    """Point out caption examples whose negative repeats the true caption: a strict
    comparison fails them for every model. They are kept, as the benchmark scores them."""
    same = [str(e["id"]) for e in examples if e["caption"] in e["negatives"]]
    if same:
        shown = ", ".join(same[:5]) + (", ..." if len(same) > 5 else "")
        note(
            f"{path}: {len(same)} example(s) with a negative identical to the caption, which "
            f"no model can pass (kept as in the source): {shown}"
        )


def checklist(description: str, tests: list[dict[str, Any]]) -> Document:
    """A checklist document in the key order the YAML should read in."""
    return {"vlcheck": FORMAT_VERSION, "description": description, "tests": tests}


def make_test(
    test_id: str,
    capability: str,
    task: str,
    examples: list[dict[str, Any]],
    *,
    threshold: float | None,
    description: str = "",
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One test mapping; ``threshold`` ``None`` means the task's chance level. ``settings``
    are the kind's test-level keys (``criterion``, ``symmetric``; a None value is left out):
    written before the examples, and counted in the chance level."""
    settings = {k: v for k, v in (settings or {}).items() if v is not None}
    if threshold is None:
        threshold = chance_level(task, examples, settings)
    out: dict[str, Any] = {
        "id": test_id,
        "capability": capability,
        "task": task,
        "threshold": threshold,
    }
    if description:
        out["description"] = description
    out.update(settings)
    out["examples"] = examples
    return out


def chance_level(
    task: str, examples: Sequence[Mapping[str, Any]], settings: Mapping[str, Any] | None = None
) -> float:
    """Expected pass rate of a scorer that guesses uniformly, rounded down to 4 places.

    It is the default threshold: an imported test then fails only when the model does worse
    than guessing, which is a floor, not a bar; users set ``--threshold`` for real gates.
    The task kind computes it from the examples as written (see ``Task.chance``); 0 for a
    kind without a chance level.
    """
    if not examples:
        return 0.0
    kind = get_task(task)
    rate = kind.chance(settings or {}, [kind.raw_grid_shape(e) for e in examples])
    return 0.0 if rate is None else int(rate * 10_000) / 10_000


def capability(*segments: str) -> str:
    """A capability path from free-form names: lowercase, ``[a-z0-9_]`` segments."""
    parts = []
    for segment in segments:
        clean = _SEGMENT_BAD.sub("_", segment.strip().lower()).strip("_")
        if not clean:
            raise ValueError(f"empty capability segment in {segments!r}")
        if not clean[0].isalpha():
            clean = "c_" + clean
        parts.append(clean)
    return "/".join(parts)


def safe_test_id(*parts: str) -> str:
    """A test id (``[A-Za-z0-9_.-]+``) from free-form parts joined by '-'."""
    text = "-".join(_TEST_ID_BAD.sub("_", part.strip()).strip("_") for part in parts)
    if not text:
        raise ValueError(f"empty test id from {parts!r}")
    return text


def text_field(
    path: Path, record: Mapping[str, Any], key: str, where: object, *, line: int | None = None
) -> str:
    """A required non-empty string field of a record, kept exactly as written."""
    if key not in record:
        raise SourceError(path, f"missing field '{key}'", line=line, record=where)
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise SourceError(
            path,
            f"field '{key}' must be a non-empty string, got {json.dumps(value)[:60]}",
            line=line,
            record=where,
        )
    return value


def is_finite_number(value: Any) -> TypeGuard[int | float]:
    """A JSON number that is one: not a boolean, not NaN or an infinity (Python's ``json``
    reads ``NaN`` and ``Infinity``, which no box or score can be)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_text(path: Path) -> str:
    """A source file's text (UTF-8, an optional BOM dropped); bad bytes give their line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(path, f"not UTF-8 text ({exc.reason})", line=line) from None


MAX_DIGITS = 100
"""The most digits a whole number in a benchmark file may have: ids, indices and counts have
a few; a wall of digits is a broken file, refused by name before ``int()`` (which gives up at
4,300 digits with a ValueError) sees it."""

_WHOLE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


class _LongNumber(ValueError):
    """A JSON integer of more than ``MAX_DIGITS`` digits (raised inside the decoder)."""

    def __init__(self, digits: str) -> None:
        super().__init__(digits)
        self.digits = digits


def _json_int(digits: str) -> int:
    if len(digits) > MAX_DIGITS + 1:  # a sign may lead
        raise _LongNumber(digits)
    return int(digits)


_DECODER = json.JSONDecoder(parse_int=_json_int)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def whole_number(text: str) -> int | None:
    """``text`` as a whole number when it is ASCII digits (at most ``MAX_DIGITS``), else
    None: ``²`` and ``٣`` pass ``str.isdigit()`` and are no index, and ``int()`` of 5,000
    digits raises."""
    return int(text) if _WHOLE.fullmatch(text) else None


def capability_segment(path: Path, text: str, what: str, *, line: int | None = None) -> str:
    """A free-form name (a category) as a capability segment, or a located ``SourceError``
    when nothing of it is left (``???``, ``—``)."""
    try:
        return capability(text)
    except ValueError:
        raise SourceError(
            path,
            f"{what} {text!r} has no letter or digit; expected a name a capability can be "
            "made of ([a-z0-9_])",
            line=line,
        ) from None


def _check_json(path: Path, text: str, first_line: int = 1) -> None:
    """Refuse JSON nested deeper than any benchmark needs before a parser recurses into it
    (``RecursionError``), at the line where it gets too deep."""
    deep = json_too_deep(text)
    if deep is not None:
        raise SourceError(path, TOO_DEEP, line=first_line + deep - 1)


def _json_error(path: Path, text: str, exc: ValueError, first_line: int = 1) -> SourceError:
    """A decoder's error at its line: bad syntax, or a number of too many digits."""
    if isinstance(exc, _LongNumber):
        line = first_line + text.count("\n", 0, max(text.find(exc.digits), 0))
        message = (
            f"a whole number of {len(exc.digits.lstrip('-'))} digits; expected at most {MAX_DIGITS}"
        )
        return SourceError(path, message, line=line)
    if isinstance(exc, json.JSONDecodeError):
        message = f"invalid JSON: {exc.msg} (column {exc.colno})"
        return SourceError(path, message, line=first_line + exc.lineno - 1)
    return SourceError(path, f"invalid JSON: {exc}", line=first_line)


def read_json(path: Path) -> Any:
    """Parse a JSON file; a syntax error, a number of too many digits or nesting too deep
    becomes ``FILE:LINE: ...``."""
    text = read_text(path)
    _check_json(path, text)
    try:
        return _DECODER.decode(text)
    except ValueError as exc:
        raise _json_error(path, text, exc) from None


def read_json_records(path: Path) -> list[tuple[int, str | int, Any]]:
    """The records of a JSON file holding an object of records (id -> record) or a list of
    them: ``(line, key, record)`` each, the key being the list index for a list.

    Each record keeps the line it starts on, so a record that cannot become an example is
    reported where it is; a repeated id is an error at its line (``json.loads`` would keep
    the last one silently).
    """
    text = read_text(path)
    _check_json(path, text)
    pos = _skip_space(text, 0)
    if not text.startswith(("{", "["), pos):
        raise SourceError(
            path, "expected a JSON object of records or a list of records", line=_line_at(text, pos)
        )
    keyed, closing = text[pos] == "{", "}" if text[pos] == "{" else "]"
    pos = _skip_space(text, pos + 1)
    records: list[tuple[int, str | int, Any]] = []
    seen: dict[str | int, int] = {}
    while not text.startswith(closing, pos):
        line = _line_at(text, pos)
        key: str | int = len(records)
        if keyed:
            key, pos = _json_value(path, text, pos)
            if not isinstance(key, str):
                raise SourceError(path, "invalid JSON: expected a string key", line=line)
            if key in seen:
                raise SourceError(path, f"id '{key}' repeats line {seen[key]}", line=line)
            pos = _expect(path, text, pos, ":")
        seen[key] = line
        value, pos = _json_value(path, text, pos)
        records.append((line, key, value))
        pos = _skip_space(text, pos)
        if not text.startswith(closing, pos):
            pos = _expect(path, text, pos, ",")
    rest = _skip_space(text, pos + 1)
    if rest != len(text):
        raise SourceError(path, "invalid JSON: extra data", line=_line_at(text, rest))
    return records


def _skip_space(text: str, pos: int) -> int:
    """The position of the first character at or after ``pos`` that is not JSON space."""
    match = _JSON_SPACE.match(text, pos)
    return match.end() if match else pos


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _json_value(path: Path, text: str, pos: int) -> tuple[Any, int]:
    """One JSON value starting at ``pos`` and the position after it."""
    try:
        return _DECODER.raw_decode(text, pos)
    except ValueError as exc:
        raise _json_error(path, text, exc) from None


def _expect(path: Path, text: str, pos: int, char: str) -> int:
    """The position after ``char`` (and the space around it) at ``pos``."""
    pos = _skip_space(text, pos)
    if not text.startswith(char, pos):
        raise SourceError(path, f"invalid JSON: expected '{char}'", line=_line_at(text, pos))
    return _skip_space(text, pos + 1)


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """The records of a JSON-lines file with their line numbers; blank lines are skipped.

    Lines are split on ``\\n`` only, as JSON Lines says: a U+2028 or a form feed inside a
    caption is text, not a line break (``str.splitlines`` would cut the record there).
    """
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        _check_json(path, line, number)
        try:
            record = _DECODER.decode(line)
        except ValueError as exc:
            raise _json_error(path, line, exc, number) from None
        yield number, record


def read_csv(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a CSV file with a header, each with the line it starts on."""
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    if not reader.fieldnames:
        raise SourceError(path, "empty file; expected a CSV header line", line=1)
    start = reader.line_num + 1
    for row in _rows(path, reader):
        if None in row or None in row.values():
            given = (
                len(reader.fieldnames)
                + len(row.get(None, ()))
                - sum(value is None for value in row.values())
            )
            raise SourceError(
                path, f"{given} values; the header has {len(reader.fieldnames)}", line=start
            )
        yield start, row
        start = reader.line_num + 1


def _rows(path: Path, reader: csv.DictReader[str]) -> Iterator[dict[Any, Any]]:
    """The reader's rows, a csv.Error becoming a located ``SourceError`` (a short row's missing
    values are None, a long row's extra ones a list under the key None)."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise SourceError(path, f"malformed CSV: {exc}", line=reader.line_num) from None
        yield row


def files_under(sources: Sequence[Path], suffixes: tuple[str, ...]) -> list[Path]:
    """The source files: each file as given, each directory walked for ``suffixes``."""
    found: list[Path] = []
    for source in sources:
        if source.is_dir():
            matches = sorted(
                p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in suffixes
            )
            if not matches:
                raise SourceError(source, f"no {' or '.join(suffixes)} files in this directory")
            found.extend(matches)
        elif source.is_file():
            found.append(source)
        else:
            raise SourceError(source, "no such file or directory")
    return found


def named_files(
    sources: Sequence[Path], suffix: str, names: Sequence[str], what: str
) -> dict[str, Path]:
    """A benchmark's files by stem, each one of ``names`` and given once; ``what`` names a
    file in messages (``a SugarCrepe++ set``)."""
    found: dict[str, Path] = {}
    for path in files_under(sources, (suffix,)):
        if path.stem not in names:
            raise SourceError(
                path,
                f"'{path.stem}' is not {what}; expected a file named one of: "
                + ", ".join(name + suffix for name in names),
            )
        if path.stem in found:
            raise SourceError(path, f"'{path.stem}' given twice (also as {found[path.stem]})")
        found[path.stem] = path
    return found


def only_one_source(sources: Sequence[Path], what: str) -> Path:
    """The single source file of a format that reads exactly one file."""
    if len(sources) != 1:
        raise SourceError(
            sources[-1] if sources else "-",
            f"expected exactly one {what}, got {len(sources)} sources",
        )
    source = sources[0]
    if not source.is_file():
        raise SourceError(source, "no such file" if not source.exists() else "not a file")
    return source


def check_loads(rendered: Sequence[tuple[Path, str]]) -> None:
    """Load every rendered checklist with the loader pytest uses, before any file is written.

    An import either writes every file or none: a set of outputs of which one would not load
    is worse than no output. ``rendered`` holds every file to write, the JSON Lines files of
    examples beside their YAML included. The loader reads files, so each text is put in a
    scratch folder laid out as the targets are; a problem is reported at the target's own
    name and line.
    """
    from pytest_vlcheck.checklist.loader import load_checklist
    from pytest_vlcheck.parsing.errors import ChecklistError

    with tempfile.TemporaryDirectory(prefix="vlcheck-import-") as scratch:
        folders: dict[Path, Path] = {}
        targets: dict[Path, Path] = {}
        for target, text in rendered:
            folder = folders.setdefault(target.parent, Path(scratch) / str(len(folders)))
            folder.mkdir(exist_ok=True)
            probe = folder / target.name
            probe.write_text(text, encoding="utf-8")
            targets[probe] = target
        for probe, target in targets.items():
            if probe.suffix not in (".yaml", ".yml"):
                continue
            try:
                load_checklist(probe, image_root=scratch)
            except ChecklistError as exc:
                first = exc.errors[0]
                raise SourceError(
                    targets.get(first.path, target),
                    f"the checklist built does not load ({first.message}); nothing was written",
                    line=first.line,
                ) from None
