"""Mappings and lists that remember the lines they were written on (YAML and JSON Lines).

Validation messages must point at a line, so the loaders build these ``dict``/``list``
subclasses carrying 1-based line numbers. ``__slots__``: a large checklist holds one per
example, and an instance ``__dict__`` each cost more than the lines themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class LineMap(dict[Any, Any]):
    """A YAML mapping (keys and values as YAML gives them) with the line of the mapping and of
    each key."""

    __slots__ = ("key_lines", "line")
    line: int
    key_lines: Mapping[Any, int]

    def line_of(self, key: Any) -> int:
        """Line of ``key`` if present, else of the mapping itself."""
        return self.key_lines.get(key, self.line)


class LineList(list[Any]):
    """A YAML sequence with the line of the sequence and of each item."""

    __slots__ = ("item_lines", "line")
    line: int
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        """Line of item ``index``."""
        return self.item_lines[index] if index < len(self.item_lines) else self.line
