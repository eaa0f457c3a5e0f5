"""One parser for every bounded number an option takes: whole numbers, finite numbers, sizes.

No option may make the tool allocate or compute in proportion to a number the user typed, and
no typed number may escape as an ``OverflowError`` or a ``ValueError`` from ``int()``: each
value is checked against its option's bounds before it is used. Digits are counted before
``int()`` converts them, so a 400-digit value costs nothing. Messages say what was given and
what is expected; callers put the option's name in front.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import numbers
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_IMAGE_MEMORY",
    "MAX_BATCH_SIZE",
    "MAX_CACHE_BYTES",
    "MAX_DROP_PTS",
    "MAX_IMAGE_PIXELS",
    "MAX_STEP",
    "BoundError",
    "argument",
    "finite_number",
    "shown",
    "size",
    "whole_number",
]

MAX_BATCH_SIZE = 65536
"""Inputs per forward pass: far above what any accelerator holds, low enough that a typo
cannot ask a backend for a batch it would try to allocate."""
MAX_CACHE_BYTES = 1024**5
"""The largest embedding cache (1024TB): a bound on a typed size, not on a real disk."""
DEFAULT_CACHE_BYTES = 2 * 1024**3
"""The embedding cache's size without ``--vl-cache-size`` (least recently used vectors go)."""
DEFAULT_IMAGE_MEMORY = 2 * 1024**3
"""Host memory for the preprocessed images a live model keeps across calls without
``--vl-image-memory`` (``engine.feed.store``): the bundled suite's 5,560 images at 224 px are
0.84 GB as open_clip's uint8 pixels."""
MAX_WORKERS = 1024
"""``--vl-workers``: more cores than a machine has is a typo (the share caps it anyway)."""
MAX_STEP = 2**63 - 1
"""Loggers store the step as a signed 64-bit integer."""
MAX_IMAGE_PIXELS = 2**40
"""Pillow's decoding limit cannot usefully exceed what memory could hold."""
MAX_DROP_PTS = 100.0
"""A pass rate moves at most 100 points."""

_MAX_DIGITS = 30
"""Longer digit strings are refused unread (every bound has fewer digits)."""

_WHOLE = re.compile(r"\s*\+?([0-9]+)\s*")
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


class BoundError(ValueError):
    """A value that is not a number within its bounds; ``str()`` is ``is X; expected ...``."""


def whole_number(value: Any, low: int, high: int) -> int:
    """``value`` (any integer, ``numbers.Integral``: a numpy integer from a training loop's
    counter too, or its decimal digits as text) as an int in [low, high]; bools aside."""
    expected = f"expected a whole number from {low} to {_bound(high)}"
    number: int
    if _integer(value):
        number = int(value)
    elif not isinstance(value, str):
        raise BoundError(f"is {shown(value)}; {expected}")
    else:
        match = _WHOLE.fullmatch(value)
        if match is None or len(match.group(1).lstrip("0")) > _MAX_DIGITS:
            raise BoundError(f"is {shown(value)}; {expected}")
        number = int(match.group(1))
    if not low <= number <= high:
        raise BoundError(f"is {shown(number)}; {expected}")
    return number


def _integer(value: Any) -> bool:
    """An integer of any type (``int``, ``numpy.int64``: whatever ``numbers.Integral``
    accepts), a bool aside: ``True`` is no count."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def finite_number(
    value: Any, low: float, high: float, *, open_low: bool = False, open_high: bool = False
) -> float:
    """``value`` (an int or float, not a bool) within its bounds, each closed unless opened:
    NaN and infinities are refused by name rather than slipping past a comparison."""
    if open_low or open_high:
        interval = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
        expected = f"expected a finite number in {interval}"
    else:
        expected = f"expected a finite number from {low:g} to {high:g}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BoundError(f"is {shown(value)}; {expected}")
    value = int(value) if _integer(value) else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise BoundError(f"is {value}; {expected}")
    below = value <= low if open_low else value < low
    above = value >= high if open_high else value > high
    if below or above:
        raise BoundError(f"is {shown(value)}; {expected}")
    return float(value)


def size(text: Any, high: int) -> int:
    """Bytes from ``500M``, ``2GB``, ``1.5GiB`` or a plain number (binary units), from 1 byte
    to ``high``."""
    expected = f"expected a size from 1 byte to {high // 1024**4}TB, e.g. 500MB or 2GB"
    if _integer(text):  # bytes, from Python
        if not 1 <= int(text) <= high:
            raise BoundError(f"is {shown(int(text))}; {expected}")
        return int(text)
    if not isinstance(text, str):
        raise BoundError(f"is {shown(text)}; {expected}")
    match = _SIZE.fullmatch(text)
    if match is None or len(match.group(1).partition(".")[0].lstrip("0")) > _MAX_DIGITS:
        raise BoundError(f"is {shown(text)}; {expected}")
    number = float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
    if not 1 <= number <= high:
        raise BoundError(f"is {shown(text)}; {expected}")
    return int(number)


def argument(parse: Callable[..., Any], *limits: Any, **flags: bool) -> Callable[[str], Any]:
    """An argparse ``type=`` for a ``vlcheck`` option: the text parsed by ``parse`` within its
    bounds, else argparse's usage error (exit status 2) with the bound in its message. Text
    for ``finite_number`` is read as a float first."""

    def convert(text: str) -> Any:
        value: Any = text
        if parse is finite_number:
            with contextlib.suppress(ValueError):  # text that is no number is refused below
                value = float(text)
        try:
            return parse(value, *limits, **flags)
        except BoundError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _bound(number: int) -> str:
    """A bound as read: ``2**63 - 1`` or ``2**40`` rather than their digits."""
    if number > 2**20 and number.bit_count() == 1:
        return f"2**{number.bit_length() - 1}"
    if number > 2**20 and (number + 1).bit_count() == 1:
        return f"2**{(number + 1).bit_length() - 1} - 1"
    return str(number)


def shown(value: Any) -> str:
    """``value`` as the message quotes it, cut short when someone typed a wall of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**_MAX_DIGITS:
        return f"a number of more than {_MAX_DIGITS} digits"
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:20] + '...'!r} ({len(value)} characters)"
    text = repr(value) if not isinstance(value, int) else str(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
