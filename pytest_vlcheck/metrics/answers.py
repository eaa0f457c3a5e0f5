"""Pure functions over what a generative model said: answer extraction and comparison, the
letter of a lettered choice, and POPE's yes/no metrics.

Extraction is deterministic and never guesses: an answer that cannot be parsed is ``None``
and counted as unparseable (VLMEvalKit's fallback to a random option is a known defect).
``normalized`` follows the VQA evaluation's spirit: lower case, punctuation dropped (a
decimal point kept), the articles a/an/the dropped, number words zero-twenty as digits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, get_args

Compare = Literal["exact", "normalized", "number", "contains"]
COMPARES: tuple[Compare, ...] = get_args(Compare)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_WORD_VALUES = {word: str(value) for value, word in enumerate(_NUMBER_WORDS)}
_ARTICLES = {"a", "an", "the"}
_PUNCTUATION = re.compile(r"(?<!\d)\.(?!\d)|[^\w\s.]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_LETTER = re.compile(r"^\(?([A-Z])(?:[).:]|\s|$)")


def normalize(text: str) -> str:
    """Lower case, punctuation and articles dropped, number words as digits, one space."""
    words = _PUNCTUATION.sub(" ", text.lower()).split()
    return " ".join(_WORD_VALUES.get(w, w) for w in words if w not in _ARTICLES)


def first_number(text: str) -> str | None:
    """The first number in ``text`` (digits, or a word zero-twenty) as digits, else None."""
    for word in normalize(text).split():
        if _NUMBER.fullmatch(word):
            return _canonical_number(word)
    return None


def _canonical_number(digits: str) -> str:
    value = float(digits)
    return str(int(value)) if value == int(value) else str(value)


def extract_answer(output: str, compare: Compare) -> str | None:
    """What ``output`` answers under ``compare``: the stripped text (exact), its normal form
    (normalized, contains) or its first number (number); None when nothing is there."""
    if compare == "number":
        return first_number(output)
    found = output.strip() if compare == "exact" else normalize(output)
    return found or None


def answer_matches(extracted: str, answers: Sequence[str], compare: Compare) -> bool:
    """Whether an extracted answer is one of the accepted ``answers`` under ``compare``
    (``contains``: an accepted answer's normal form appears whole-word in it)."""
    if compare == "exact":
        return extracted in {a.strip() for a in answers}
    if compare == "number":
        return extracted in {n for n in map(first_number, answers) if n is not None}
    if compare == "normalized":
        return extracted in {normalize(a) for a in answers}
    padded = f" {extracted} "
    return any(f" {normalize(a)} " in padded for a in answers if normalize(a))


def extract_choice(output: str, options: Sequence[str]) -> int | None:
    """The position an answer to a lettered question picks: its leading letter (``B``,
    ``(B)``, ``B.``) when within the options, else the one option whose normal form appears
    whole-word in it; None when neither (or several options appear)."""
    text = output.strip()
    letter = _LETTER.match(text)
    if letter is not None:
        index = LETTERS.index(letter.group(1))
        return index if index < len(options) else None
    padded = f" {normalize(text)} "
    found = [i for i, option in enumerate(options) if f" {normalize(option)} " in padded]
    return found[0] if len(found) == 1 else None


def rotation(n_options: int, shift: int) -> list[int]:
    """The option shown at each position when the options are rotated by ``shift``."""
    return [(position + shift) % n_options for position in range(n_options)]


def yes_no_metrics(said_yes: Sequence[bool], labels: Sequence[bool]) -> dict[str, float]:
    """POPE's numbers with ``yes`` the positive class: ``yes_ratio`` (the share answered
    yes: the answer bias), ``precision``, ``recall`` and ``f1`` (each left out when its
    denominator is zero)."""
    n = len(labels)
    tp = sum(1 for s, y in zip(said_yes, labels, strict=True) if s and y)
    fp = sum(1 for s, y in zip(said_yes, labels, strict=True) if s and not y)
    fn = sum(1 for s, y in zip(said_yes, labels, strict=True) if not s and y)
    out: dict[str, float] = {}
    if n:
        out["yes_ratio"] = (tp + fp) / n
    if tp + fp:
        out["precision"] = tp / (tp + fp)
    if tp + fn:
        out["recall"] = tp / (tp + fn)
    if "precision" in out and "recall" in out and tp:
        p, r = out["precision"], out["recall"]
        out["f1"] = 2 * p * r / (p + r)
    return out
