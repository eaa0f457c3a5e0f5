"""Number formatting shared by every human-readable report, so all of them print the same.

Rounding is half-up on the decimal text of the number (its shortest ``repr``, which is what
``matrix.json`` stores): 0.6125 prints as ``61.3%`` whether it came from a live run or from a
re-rendered file, and never depends on the binary representation of the float.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import TypeGuard

__all__ = [
    "MISSING",
    "ci",
    "label",
    "pct",
    "plural",
    "points",
    "score",
    "truncate",
    "value",
    "with_article",
]

MISSING = "n/a"
_ONE_PLACE = Decimal("0.1")
_FOUR_PLACES = Decimal("0.0001")


def _finite(x: float | int | None) -> TypeGuard[float | int]:
    """None, NaN and infinities print as ``n/a`` (the terminal table sees unvalidated rows)."""
    return x is not None and not (isinstance(x, float) and not math.isfinite(x))


def _decimal(x: float | int) -> Decimal:
    return Decimal(repr(x)) if isinstance(x, float) else Decimal(int(x))


def _rounded(d: Decimal, places: Decimal) -> str:
    q = d.quantize(places, rounding=ROUND_HALF_UP)
    if q == 0:
        q = abs(q)  # never print "-0.0"
    return str(q)


def pct(x: float | int | None) -> str:
    """A rate in [0, 1] as a percentage with one decimal: ``0.6125 -> '61.3%'``."""
    if _finite(x):
        return _rounded(_decimal(x) * 100, _ONE_PLACE) + "%"
    return MISSING


def points(delta_pts: float | int | None, *, signed: bool = True) -> str:
    """A change in percentage points with one decimal, the one rule for every printed delta:
    the value rounded to 9 decimals (float noise: 100 * (0.275 - 0.4125) is
    -13.749999999999998), then half away from zero: ``-13.8``; signed, ``+5.0`` and ``0.0``."""
    if not _finite(delta_pts):
        return MISSING
    text = _rounded(Decimal(repr(round(float(delta_pts), 9))), _ONE_PLACE)
    return "+" + text if signed and not text.startswith("-") and text != "0.0" else text


def ci(low: float | int | None, high: float | int | None) -> str:
    """A confidence interval in percent without the sign: ``(0.5637, 0.6591) -> '56.4-65.9'``."""
    if _finite(low) and _finite(high):
        return pct(low)[:-1] + "-" + pct(high)[:-1]
    return MISSING


def value(x: float | int | None) -> str:
    """A metric value: integers as they are, floats with four decimals."""
    if isinstance(x, int):
        return str(x)
    if _finite(x):
        return _rounded(_decimal(x), _FOUR_PLACES)
    return MISSING


def score(x: float | int | None) -> str:
    """A similarity score of a failure example (same precision as a metric)."""
    return value(x)


def a(noun: str) -> str:
    """The noun with its indefinite article: ``a caption``, ``an image``."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def plural(count: int, noun: str, many: str | None = None) -> str:
    """A count with its noun in the right number: ``1 test``, ``2 tests``, ``0 files``;
    ``many`` for an irregular plural (``plural(n, "entry", "entries")``)."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def with_article(word: str) -> str:
    """``a dict``, ``an OrderedDict``, ``an int``: the article a reader expects before a
    type's name (by its first letter: good enough for type names)."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def truncate(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` characters, ending with an ellipsis when it was cut."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"


def label(capability: str, suffix: str, width: int) -> str:
    """A matrix row label cut to ``width``, shortening the capability before its suffix."""
    if len(capability) + len(suffix) <= width:
        return capability + suffix
    if suffix and width - len(suffix) >= 6:
        return truncate(capability, width - len(suffix)) + suffix
    return truncate(capability + suffix, width)
