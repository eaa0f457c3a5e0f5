"""Typed access to one YAML mapping, with errors that name the file, line and key."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from pytest_vlcheck.parsing.errors import ChecklistError, closest, did_you_mean
from pytest_vlcheck.parsing.line_values import LineList, LineMap

_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "true or false"),  # before int: a bool is an int to Python, not to a reader
    (str, "a string"),
    (int, "an integer"),
    (float, "a number"),
    (list, "a list"),
    (Mapping, "a mapping"),
)


def type_name(value: Any) -> str:
    """How a YAML value's type reads in a message (never an internal class name such as the
    line-tracking ``LineList``/``LineMap``)."""
    if value is None:
        return "nothing (null)"
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "a date"
    if isinstance(value, bytes):
        return "binary data"
    return "a value of an unsupported type"


def number_text(value: float) -> str:
    """A number as YAML writes it: ``.inf``, ``-.inf``, ``.nan``, else Python's form."""
    if math.isnan(value):
        return ".nan (not a number)"
    if math.isinf(value):
        return ".inf (infinite)" if value > 0 else "-.inf (infinite)"
    return f"{value:g}" if isinstance(value, float) else str(value)


class Fields:
    """One mapping of a checklist (the file, a test, an example, an image) under validation.

    ``where`` names it in messages (``test 'color'``); ``fallback_line`` is used for mappings
    that carry no line numbers (examples made by a generator point at their ``generate:``).
    """

    def __init__(self, path: Path, value: Any, where: str, fallback_line: int) -> None:
        self.path = path
        self.where = where
        self.line = getattr(value, "line", fallback_line)
        if not isinstance(value, Mapping):
            self.fail(f"{where} must be a mapping, got {type_name(value)}")
        self.data: Mapping[str, Any] = value

    def fail(self, message: str, key: str | None = None) -> NoReturn:
        """Raise a ``ChecklistError`` at ``key``'s line (or the mapping's)."""
        raise ChecklistError(self.path, self.line_of(key), message)

    def line_of(self, key: str | None) -> int:
        """Line of ``key`` when known."""
        if key is not None and isinstance(self.data, LineMap) and key in self.data:
            return self.data.line_of(key)
        return self.line

    def check_keys(self, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
        """Unknown keys and missing required keys are errors, all reported at once; a missing
        key that an unknown key misspells is told once, by the unknown key's "did you mean"."""
        allowed = set(allowed)
        expected = ", ".join(sorted(allowed))
        unknown = [str(key) for key in self.data if key not in allowed]
        suggested = {closest(key, allowed) for key in unknown}
        errors = [
            ChecklistError(
                self.path,
                self.line_of(key),
                f"unknown key '{key}' in {self.where}{did_you_mean(key, allowed)}; "
                f"expected one of: {expected}",
            )
            for key in unknown
        ]
        errors += [
            ChecklistError(
                self.path, self.line, f"{self.where} is missing the required key '{key}'"
            )
            for key in required
            if key not in self.data and key not in suggested
        ]
        if errors:
            raise ChecklistError.combine(errors)

    def has(self, key: str) -> bool:
        """Whether ``key`` is given."""
        return key in self.data

    def raw(self, key: str) -> Any:
        """The value as written."""
        return self.data[key]

    def text(
        self,
        key: str,
        default: str | None = None,
        *,
        pattern: str | None = None,
        expected: str = "",
    ) -> str:
        """A non-empty string, optionally matching ``pattern``."""
        if key not in self.data:
            if default is None:
                self.fail(f"{self.where} is missing the required key '{key}'")
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(f"'{key}' must be a non-empty string, got {_not_text(value)}", key)
        if pattern and not re.fullmatch(pattern, value):
            self.fail(f"'{key}' is '{value}'; expected {expected or 'to match ' + pattern}", key)
        return value

    def number(
        self,
        key: str,
        default: float | None = None,
        *,
        low: float = -math.inf,
        high: float = math.inf,
        expected: str = "",
    ) -> float:
        """A finite number in [low, high]; ``expected`` words the range in messages."""
        if key not in self.data:
            if default is None:
                self.fail(f"{self.where} is missing the required key '{key}'")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"'{key}' must be a number, got {type_name(value)}", key)
        expected = expected or _range(low, high)
        if not math.isfinite(value):
            self.fail(f"'{key}' is {number_text(value)}; expected {expected}", key)
        if not low <= value <= high:
            self.fail(f"'{key}' is {value}; expected {expected}", key)
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        """``true`` or ``false``."""
        if key not in self.data:
            return default
        value = self.data[key]
        if not isinstance(value, bool):
            self.fail(f"'{key}' must be true or false, got {type_name(value)}", key)
        return value

    def choice(self, key: str, choices: Iterable[str], default: str | None = None) -> str:
        """One of ``choices``."""
        choices = tuple(choices)
        value = self.text(key, default)
        if value not in choices:
            hint = did_you_mean(value, choices)
            self.fail(f"'{key}' is '{value}'{hint}; expected one of: {', '.join(choices)}", key)
        return value

    def strings(self, key: str, *, min_items: int = 1, exact: int | None = None) -> tuple[str, ...]:
        """A list of non-empty strings."""
        value = self.items(key, min_items=min_items, exact=exact)
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise ChecklistError(
                    self.path,
                    _item_line(value, index, self.line_of(key)),
                    f"'{key}' item {index + 1} must be a non-empty string, got {_not_text(item)}",
                )
        return tuple(value)

    def items(self, key: str, *, min_items: int = 1, exact: int | None = None) -> list[Any]:
        """A list with a length check."""
        if key not in self.data:
            self.fail(f"{self.where} is missing the required key '{key}'")
        value = self.data[key]
        if not isinstance(value, list):
            self.fail(f"'{key}' must be a list, got {type_name(value)}", key)
        if exact is not None and len(value) != exact:
            self.fail(f"'{key}' has {len(value)} items; expected exactly {exact}", key)
        if len(value) < min_items:
            self.fail(f"'{key}' has {len(value)} items; expected at least {min_items}", key)
        return value

    def item_line(self, key: str, index: int) -> int:
        """Line of item ``index`` of the list under ``key``."""
        return _item_line(self.data.get(key), index, self.line_of(key))

    def item_lines(self, key: str) -> list[int]:
        """The line of every item of the list under ``key``, as ``item_line`` gives them
        (in one step: a test may have 100,000 examples)."""
        value = self.data[key]
        if isinstance(value, LineList) and len(value.item_lines) == len(value):
            return value.item_lines
        return [self.item_line(key, index) for index in range(len(value))]


def _range(low: float, high: float) -> str:
    """The 'expected' part for a number: finite, within bounds where there are bounds."""
    if math.isinf(low) and math.isinf(high):
        return "a finite number"
    if math.isinf(high):
        return f"a finite number of at least {low:g}"
    if math.isinf(low):
        return f"a finite number of at most {high:g}"
    return f"a number from {low:g} to {high:g}"


def _item_line(value: Any, index: int, fallback: int) -> int:
    return value.line_of(index) if isinstance(value, LineList) else fallback


def _not_text(value: Any) -> str:
    """What a value that should have been a non-empty string is: blank, or another type."""
    return "a blank string" if isinstance(value, str) else type_name(value)
