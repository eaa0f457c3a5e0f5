"""Validating JSON the tool wrote earlier (reports, baselines, result rows): one checker and
one file reader, so every message reads ``SOURCE: where: what is wrong, expected what``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from pytest_vlcheck.nesting import TOO_DEEP, json_too_deep


class ReportFormatError(ValueError):
    """A file the tool wrote (``matrix.json``, a baseline) is not valid; the message names the
    file and field."""


def is_number(x: Any) -> TypeGuard[float]:
    """An int or float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_int(x: Any) -> TypeGuard[int]:
    """An int, not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


class KeyedObject(dict[str, Any]):
    """A JSON object as parsed by ``read_json``: ``repeated`` names each key the text gave
    more than once (``json`` keeps the last silently), for ``JsonChecker.mapping`` to refuse."""

    repeated: tuple[str, ...] = ()


def _keyed_object(pairs: list[tuple[str, Any]]) -> KeyedObject:
    obj = KeyedObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeats = []
        for key, _ in pairs:
            if key in seen:
                repeats.append(key)
            seen.add(key)
        obj.repeated = tuple(repeats)
    return obj


class JsonChecker:
    """Field checks that raise ``error`` naming ``source`` (when given) and the field."""

    def __init__(self, source: str, error: type[ValueError]) -> None:
        self.source = source
        self.error = error

    def fail(self, where: str, message: str) -> ValueError:
        prefix = f"{self.source}: " if self.source else ""
        return self.error(f"{prefix}{where}: {message}")

    def text(self, obj: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
        if key not in obj:
            if default is not None:
                return default
            raise self.fail(where, f"missing key {key!r}, expected a string")
        value = obj[key]
        if not isinstance(value, str):
            raise self.fail(f"{where}.{key}", f"expected a string, got {value!r}")
        return value

    def integer(self, value: Any, where: str) -> int:
        if not is_int(value) or value < 0:
            raise self.fail(where, f"expected a non-negative integer, got {value!r}")
        return int(value)

    def number(self, value: Any, where: str) -> float | None:
        """A number or null; NaN and infinities become None (JSON has no spelling for them)."""
        if value is None:
            return None
        if not is_number(value):
            raise self.fail(where, f"expected a number or null, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected an object, got {type(value).__name__}")
        repeated = getattr(value, "repeated", ())
        if repeated:
            raise self.fail(where, f"key {repeated[0]!r} appears twice; expected each key once")
        return value

    def listing(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            kind = "dict" if isinstance(value, dict) else type(value).__name__
            raise self.fail(where, f"expected a list, got {kind}")
        return value


def read_json(path: str | Path, what: str, error: type[ValueError]) -> Any:
    """The parsed JSON document at ``path``; ``error`` names the file (and line for bad JSON
    or one nested too deep). Objects are ``KeyedObject``s: a repeated key is not lost."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{p}: no such file, expected {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{p}: cannot read {what}: {exc}") from None
    deep = json_too_deep(text)
    if deep is not None:
        raise error(f"{p}:{deep}: {TOO_DEEP}")
    try:
        return json.loads(text, object_pairs_hook=_keyed_object)
    except json.JSONDecodeError as exc:
        raise error(f"{p}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
