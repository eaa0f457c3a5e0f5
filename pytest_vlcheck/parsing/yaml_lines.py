"""Safe YAML loading that remembers the line of every mapping, key and list item.

Validation messages must point at a line, so the loader builds ``LineMap``/``LineList``
(``parsing.line_values``) that carry 1-based line numbers. Duplicate keys, which
PyYAML silently overwrites, are reported, and so is nesting deeper than
``nesting.MAX_NESTING`` (construction recurses per level). Files are read as UTF-8 (a
leading byte-order mark is accepted); a byte that is not UTF-8 is reported at its own line
and column.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import yaml

from pytest_vlcheck.nesting import MAX_NESTING, TOO_DEEP
from pytest_vlcheck.parsing.block_yaml import build_block
from pytest_vlcheck.parsing.errors import ChecklistError
from pytest_vlcheck.parsing.line_values import LineList, LineMap
from pytest_vlcheck.parsing.yaml_events import NotPlain, build_plain

_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML has it (an order of magnitude faster on large imports); the
constructors below are the safe ones either way."""


def _make_loader(path: Path) -> type:
    class Loader(_BASE):
        depth = 0

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            if not isinstance(node, yaml.CollectionNode):
                return super().construct_object(node, deep=deep)
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise ChecklistError(path, node.start_mark.line + 1, TOO_DEEP)
            try:
                return super().construct_object(node, deep=deep)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineMap:
            result = LineMap()
            result.line = node.start_mark.line + 1
            result.key_lines = {}
            self.flatten_mapping(node)
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    hash(key)
                except TypeError:
                    raise ChecklistError(path, line, "a mapping key must be a scalar") from None
                if key in result:
                    raise ChecklistError(path, line, f"duplicate key '{key}'")
                result[key] = self.construct_object(value_node, deep=True)
                result.key_lines[key] = line
            return result

        def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
            try:
                return super().construct_yaml_timestamp(node)
            except ValueError as exc:  # 2001-13-45 has a date's shape and is no date
                raise ChecklistError(
                    path,
                    node.start_mark.line + 1,
                    f"'{node.value}' is not a date ({exc}); quote it to keep it as text",
                ) from None

        def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> LineList:
            result = LineList(self.construct_object(child, deep=True) for child in node.value)
            result.line = node.start_mark.line + 1
            result.item_lines = [child.start_mark.line + 1 for child in node.value]
            return result

    Loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_mapping)
    Loader.add_constructor("tag:yaml.org,2002:seq", Loader.construct_sequence)
    Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_timestamp)
    return Loader


def load_yaml(path: Path) -> Any:
    """Parse ``path`` safely; syntax errors become ``ChecklistError`` at the offending line.

    A checklist in block YAML is read line by line (``block_yaml``); other plain YAML is
    built from the parser's events (``yaml_events``, several times faster than the full
    loader); any other text, or one with a problem, goes through the full loader below.
    """
    text = read_text_utf8(path)
    for build in (build_block, build_plain):
        try:
            return build(text, _BASE)
        except NotPlain:
            continue
    return _load_full(path, text)


def _load_full(path: Path, text: str) -> Any:
    """Every YAML feature a safe loader has, and the one place that words YAML errors."""
    try:
        return yaml.load(text, Loader=_make_loader(path))
    except RecursionError:  # PyYAML's pure-Python parser, without libyaml, recurses too
        raise ChecklistError(path, 1, TOO_DEEP) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = exc.problem or exc.context or "invalid YAML"
        if "nesting depth" in problem:  # libyaml's own bound, far above ours
            raise ChecklistError(path, line, TOO_DEEP) from None
        raise ChecklistError(path, line, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ChecklistError(path, 1, f"invalid YAML: {exc}") from None


def read_text_utf8(path: Path) -> str:
    """A checklist, JSONL or score file's text; a UTF-8 BOM is dropped. A file that cannot be
    read, or a byte that is not UTF-8, is a ``ChecklistError`` at the line of the problem."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ChecklistError(path, 1, "is a directory; expected a file") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ChecklistError(path, 1, f"cannot read the file ({reason})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ChecklistError(path, *_bad_byte(data, exc.start)) from None


def _bad_byte(data: bytes, start: int) -> tuple[int, str]:
    """(line, message) for the first byte at ``start`` that is not UTF-8."""
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8-sig", errors="replace")) + 1
    line = data.count(b"\n", 0, start) + 1
    return line, (
        f"not UTF-8 text (byte 0x{data[start]:02x} at column {column}); save the file as UTF-8"
    )


HEADER_BYTES = 4096
_HEADER = re.compile(rb"^vlcheck\s*:", re.MULTILINE)
_INDENTED_HEADER = re.compile(rb"^[ \t]+vlcheck\s*:", re.MULTILINE)


def checklist_header_problem(path: Path) -> str | None:
    """Why ``path`` is not a checklist (None when it is one): a checklist is a ``.yaml`` or
    ``.yml`` file with a top-level ``vlcheck:`` line in its first 4096 bytes.

    The message is complete (``FILE:LINE: what, expected``), for a file the user named.
    """
    if path.suffix not in (".yaml", ".yml"):
        return f"{path}: not a checklist: expected a .yaml or .yml file starting with 'vlcheck: 1'"
    try:
        with path.open("rb") as handle:
            head = handle.read(HEADER_BYTES)
    except OSError as exc:
        return f"{path}:1: cannot read the file ({exc.strerror or type(exc).__name__})"
    head = head.removeprefix(codecs.BOM_UTF8)
    if _HEADER.search(head):
        return None
    indented = _INDENTED_HEADER.search(head)
    if indented:
        line = head.count(b"\n", 0, indented.start()) + 1
        return (
            f"{path}:{line}: not a checklist: 'vlcheck:' is indented; expected it at the start "
            "of a line (the top level of the file), e.g. 'vlcheck: 1'"
        )
    return (
        f"{path}:1: not a checklist: the 'vlcheck: 1' header is missing; expected a top-level "
        f"'vlcheck: 1' line within the first {HEADER_BYTES} bytes, then 'tests:'"
    )
