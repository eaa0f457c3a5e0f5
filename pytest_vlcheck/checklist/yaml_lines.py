"""Safe YAML loading that remembers the line of every mapping, key and list item.

Validation messages must point at a line, so the loader builds ``LineMap``/``LineList``
(plain ``dict``/``list`` subclasses) that carry 1-based line numbers. Duplicate keys, which
PyYAML silently overwrites, are reported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_vlcheck.checklist.errors import ChecklistError


class LineMap(dict):
    """A YAML mapping with the line of the mapping and of each key."""

    line: int
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        """Line of ``key`` if present, else of the mapping itself."""
        return self.key_lines.get(key, self.line)


class LineList(list):
    """A YAML sequence with the line of the sequence and of each item."""

    line: int
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        """Line of item ``index``."""
        return self.item_lines[index] if index < len(self.item_lines) else self.line


_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML has it (an order of magnitude faster on large imports); the
constructors below are the safe ones either way."""


def _make_loader(path: Path) -> type:
    class Loader(_BASE):  # type: ignore[misc, valid-type]
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

        def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> LineList:
            result = LineList(self.construct_object(child, deep=True) for child in node.value)
            result.line = node.start_mark.line + 1
            result.item_lines = [child.start_mark.line + 1 for child in node.value]
            return result

    Loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_mapping)
    Loader.add_constructor("tag:yaml.org,2002:seq", Loader.construct_sequence)
    return Loader


def load_yaml(path: Path) -> Any:
    """Parse ``path`` safely; syntax errors become ``ChecklistError`` at the offending line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ChecklistError(path, 1, f"cannot read file: {exc}") from None
    try:
        return yaml.load(text, Loader=_make_loader(path))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = exc.problem or exc.context or "invalid YAML"
        raise ChecklistError(path, line, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ChecklistError(path, 1, f"invalid YAML: {exc}") from None
