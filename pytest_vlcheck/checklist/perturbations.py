"""Word-level perturbations that turn a true caption into a hard negative.

Every function is pure and seeded: it takes the caption and a ``random.Random`` (or an int
seed) and returns the perturbed caption, which is guaranteed to differ from the input, or
``None`` when the caption offers nothing to perturb (no attribute word, fewer than two
distinct words to shuffle, ...). Callers decide whether ``None`` is an error.

The four word-order shuffles follow the definitions of ARO's COCO-Order / Flickr-Order sets
(Yuksekgonul et al.): shuffle the nouns and adjectives among themselves, shuffle everything
else among itself, shuffle the order of trigrams, shuffle the words inside each trigram.
Telling nouns and adjectives apart needs part-of-speech tags; no tagger model can be
downloaded here, so the shuffles use a closed lexicon: pass ``nouns`` / ``adjectives`` sets
for your vocabulary, otherwise ``is_noun_or_adjective`` decides with a built-in word list
(scene vocabulary, common caption nouns/adjectives, closed-class function words) and treats
an unknown open-class word as a noun unless it looks like a verb form (-ing, -ed).

Tokens are whitespace-separated words. Trailing sentence punctuation (``.``, ``!``, ``?``)
is detached before shuffling and put back at the end, so it never moves into the middle.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

from pytest_vlcheck.images.scenes import (
    COLORS,
    SHAPE_PLURALS,
    SHAPES,
    SIZE_WORDS,
    TEXTURES,
)

Rng = random.Random | int
T = TypeVar("T")
_TRIES = 25  # random draws before falling back to a deterministic change

# Closed-class words: never nouns or adjectives.
_FUNCTION_WORDS_TEXT = """
    a an the this that these those some any each every no all both either neither another
    other such what which whose who whom its his her their our my your one two three four
    five six seven eight nine ten several many few much more most less least
    in on at of to from by with without into onto over under above below beneath behind
    near beside besides between among through across along around toward towards up down
    out off inside outside within upon about against after before during next left right
    and or but nor so yet as than while because if then there here where when how why
    is are was were be been being am has have had do does did can could will would shall
    should may might must it he she they we you i me him them us itself
    not very too also just only even still again
"""
FUNCTION_WORDS: frozenset[str] = frozenset(_FUNCTION_WORDS_TEXT.split())
"""Words the default lexicon never tags as noun or adjective (determiners, prepositions,
pronouns, conjunctions, auxiliaries, numerals, adverbs). ``left`` and ``right`` are here
because in spatial captions they head a preposition phrase (``to the left of``)."""

_COMMON_NOUNS_TEXT = """
    man men woman women person people boy girl child children kid kids player players
    dog dogs cat cats horse horses bird birds cow cows sheep elephant elephants bear bears
    zebra zebras giraffe giraffes animal animals car cars bus buses truck trucks train trains
    bike bicycle motorcycle plane airplane boat boats street road sidewalk city building
    buildings house room kitchen bathroom table tables chair chairs bed couch sofa desk
    window door wall floor ceiling plate plates bowl cup glass bottle food pizza sandwich
    cake banana bananas apple apples orange oranges fruit vegetables tree trees grass field
    water beach ocean sea wave waves sky snow mountain hill park bench sign clock phone
    laptop computer tv television screen shirt hat bag umbrella kite frisbee ball bat
    racket skateboard surfboard skis board toilet sink mirror picture photo image shape
    shapes object objects thing things background foreground side top bottom middle center
    corner edge front back hydrant fire group team crowd stand line area scene view
    outline pattern stripes dots squares circle
"""
COMMON_NOUNS: frozenset[str] = frozenset(_COMMON_NOUNS_TEXT.split())

_COMMON_ADJECTIVES_TEXT = """
    big small large little tiny huge tall short long wide narrow young old new
    good bad nice pretty beautiful happy sad empty full open closed wet dry clean dirty
    hot cold warm bright dark light heavy fresh wooden metal plastic glass stone leather
    striped dotted checkered spotted plain solid hollow filled outlined round square
    red orange yellow green blue purple pink brown black white gray grey silver gold
    lightgray beige colorful single double medium
"""
COMMON_ADJECTIVES: frozenset[str] = frozenset(_COMMON_ADJECTIVES_TEXT.split())


def _scene_words() -> frozenset[str]:
    words = set(SHAPES) | set(SHAPE_PLURALS.values())
    return frozenset(words)


def _scene_adjectives() -> frozenset[str]:
    return frozenset(set(COLORS) | set(TEXTURES) | set(SIZE_WORDS) | {"hollow", "filled"})


DEFAULT_NOUNS: frozenset[str] = COMMON_NOUNS | _scene_words()
DEFAULT_ADJECTIVES: frozenset[str] = COMMON_ADJECTIVES | _scene_adjectives()


def _rng(rng: Rng) -> random.Random:
    return rng if isinstance(rng, random.Random) else random.Random(rng)


def _norm(word: str) -> str:
    """A token as the lexicon sees it: lower case, surrounding punctuation removed."""
    return word.strip(".,;:!?\"'()[]").lower()


def is_noun_or_adjective(
    word: str,
    nouns: Collection[str] | None = None,
    adjectives: Collection[str] | None = None,
) -> bool:
    """The shuffles' POS decision for one token.

    With ``nouns`` or ``adjectives`` given, only those sets count (exact, lower-cased match).
    Without, the default lexicon: function words are not; listed nouns/adjectives are; other
    words are, unless they look like verb forms (-ing, -ed) or are numbers.
    """
    w = _norm(word)
    if nouns is not None or adjectives is not None:
        return w in (nouns or ()) or w in (adjectives or ())
    if not w or w in FUNCTION_WORDS:
        return False
    if w in DEFAULT_NOUNS or w in DEFAULT_ADJECTIVES:
        return True
    if w.isdigit() or (len(w) > 4 and (w.endswith("ing") or w.endswith("ed"))):
        return False
    return w.isalpha()


def _split(caption: str) -> tuple[list[str], str]:
    """Words and the detached trailing sentence punctuation."""
    text = caption.strip()
    tail = ""
    while text and text[-1] in ".!?":
        tail = text[-1] + tail
        text = text[:-1].rstrip()
    return text.split(), tail


def _join(words: Sequence[str], tail: str) -> str:
    return " ".join(words) + tail


def _permute(items: list[T], rng: random.Random) -> list[T] | None:
    """A permutation of ``items`` that differs from it as a sequence, or None if none exists."""
    if len(set(map(repr, items))) < 2:
        return None
    for _ in range(_TRIES):
        out = items[:]
        rng.shuffle(out)
        if out != items:
            return out
    # Deterministic fallback: swap the first item with the first one that differs from it.
    out = items[:]
    j = next(i for i in range(1, len(out)) if out[i] != out[0])
    out[0], out[j] = out[j], out[0]
    return out


def _shuffle_positions(
    words: list[str], positions: list[int], rng: random.Random
) -> list[str] | None:
    picked = _permute([words[i] for i in positions], rng)
    if picked is None:
        return None
    out = words[:]
    for i, w in zip(positions, picked, strict=True):
        out[i] = w
    return out


def shuffle_nouns_and_adjectives(
    caption: str,
    rng: Rng,
    nouns: Collection[str] | None = None,
    adjectives: Collection[str] | None = None,
) -> str | None:
    """Permute the nouns and adjectives among their own positions; the rest stays put."""
    words, tail = _split(caption)
    pos = [i for i, w in enumerate(words) if is_noun_or_adjective(w, nouns, adjectives)]
    out = _shuffle_positions(words, pos, _rng(rng))
    return None if out is None else _join(out, tail)


def shuffle_all_but_nouns_and_adjectives(
    caption: str,
    rng: Rng,
    nouns: Collection[str] | None = None,
    adjectives: Collection[str] | None = None,
) -> str | None:
    """Permute every word that is not a noun or adjective; nouns and adjectives stay put."""
    words, tail = _split(caption)
    pos = [i for i, w in enumerate(words) if not is_noun_or_adjective(w, nouns, adjectives)]
    out = _shuffle_positions(words, pos, _rng(rng))
    return None if out is None else _join(out, tail)


def _trigrams(words: list[str]) -> list[list[str]]:
    return [words[i : i + 3] for i in range(0, len(words), 3)]


def shuffle_trigrams(caption: str, rng: Rng) -> str | None:
    """Cut the caption into consecutive trigrams (the last may be shorter); permute them."""
    words, tail = _split(caption)
    out = _permute(_trigrams(words), _rng(rng))
    return None if out is None else _join([w for tri in out for w in tri], tail)


def shuffle_within_trigrams(caption: str, rng: Rng) -> str | None:
    """Permute the words inside each trigram; the trigrams keep their order.

    Every trigram is shuffled independently; the result differs from the input as a whole
    (at least one trigram changes).
    """
    words, tail = _split(caption)
    r = _rng(rng)
    tris = _trigrams(words)
    movable = [i for i, t in enumerate(tris) if len(set(t)) >= 2]
    if not movable:
        return None
    for _ in range(_TRIES):
        out = [t[:] for t in tris]
        for t in out:
            r.shuffle(t)
        if out != tris:
            return _join([w for t in out for w in t], tail)
    out = [t[:] for t in tris]
    out[movable[0]] = _permute(out[movable[0]], r)  # type: ignore[assignment]
    return _join([w for t in out for w in t], tail)


SHUFFLES: dict[str, Callable[..., str | None]] = {
    "nouns_adjectives": shuffle_nouns_and_adjectives,
    "all_but_nouns_adjectives": shuffle_all_but_nouns_and_adjectives,
    "trigrams": shuffle_trigrams,
    "within_trigrams": shuffle_within_trigrams,
}
"""The four ARO word-order shuffles by name (generator YAML uses these names)."""


# --------------------------------------------------------------------------- attributes


def _find(words: list[str], vocabulary: Collection[str]) -> list[int]:
    vocab = {v.lower() for v in vocabulary}
    return [i for i, w in enumerate(words) if _norm(w) in vocab]


def _respell(original: str, new: str) -> str:
    """``new`` with the punctuation around ``original`` and its capitalisation."""
    core = _norm(original)
    start = original.lower().find(core)
    prefix, suffix = original[:start], original[start + len(core) :]
    if original[start : start + 1].isupper():
        new = new[:1].upper() + new[1:]
    return prefix + new + suffix


def replace_attribute(
    caption: str,
    rng: Rng,
    vocabulary: Sequence[str],
    choices: Sequence[str] | None = None,
) -> str | None:
    """Replace one attribute word (a word of ``vocabulary``) with a different one.

    ``choices`` are the candidate replacements (default: ``vocabulary``); a replacement
    never equals the word it replaces. With several attribute words, one is picked at random.
    """
    words, tail = _split(caption)
    r = _rng(rng)
    hits = _find(words, vocabulary)
    if not hits:
        return None
    i = r.choice(hits)
    old = _norm(words[i])
    options = sorted({c for c in (choices or vocabulary) if c.lower() != old})
    if not options:
        return None
    out = words[:]
    out[i] = _respell(words[i], r.choice(options))
    return _join(out, tail)


def swap_attributes(caption: str, rng: Rng, vocabulary: Sequence[str]) -> str | None:
    """Swap two different attribute words of the caption (``a red circle and a blue square``
    -> ``a blue circle and a red square``): same words, wrong binding."""
    words, tail = _split(caption)
    r = _rng(rng)
    hits = _find(words, vocabulary)
    pairs = [(i, j) for i in hits for j in hits if i < j and _norm(words[i]) != _norm(words[j])]
    if not pairs:
        return None
    i, j = r.choice(pairs)
    out = words[:]
    out[i], out[j] = _respell(words[i], _norm(words[j])), _respell(words[j], _norm(words[i]))
    return _join(out, tail)


# --------------------------------------------------------------------------- relations

COPULAS = ("is", "are")


def _find_phrase(words: list[str], phrases: Sequence[str]) -> tuple[int, int, str] | None:
    """The first occurrence of the longest matching phrase: (start, end, phrase)."""
    normed = [_norm(w) for w in words]
    best: tuple[int, int, str] | None = None
    for phrase in sorted(phrases, key=lambda p: (-len(p.split()), p)):
        toks = phrase.lower().split()
        for s in range(len(words) - len(toks) + 1):
            if normed[s : s + len(toks)] == toks:
                if best is None or s < best[0] or (s == best[0] and s + len(toks) > best[1]):
                    best = (s, s + len(toks), phrase)
                break
    return best


def replace_relation(
    caption: str,
    rng: Rng,
    relations: Sequence[str],
    replacements: Mapping[str, Sequence[str]] | None = None,
) -> str | None:
    """Replace the caption's relation phrase (e.g. ``to the left of``) with another one.

    ``replacements`` maps a phrase to its allowed substitutes (e.g. its opposite); without
    it, any other phrase of ``relations`` may be chosen.
    """
    words, tail = _split(caption)
    found = _find_phrase(words, relations)
    if found is None:
        return None
    s, e, phrase = found
    pool = replacements.get(phrase, ()) if replacements is not None else relations
    options = sorted({p for p in pool if p.lower() != phrase.lower()})
    if not options:
        return None
    new = _rng(rng).choice(options).split()
    return _join(words[:s] + new + words[e:], tail)


def swap_subject_object(caption: str, relations: Sequence[str]) -> str | None:
    """Swap the phrases around the relation: ``the plate is on the table`` -> ``the table is
    on the plate``. A copula (is/are) before the relation stays in place. Deterministic
    (there is one swap), so it takes no seed."""
    words, tail = _split(caption)
    found = _find_phrase(words, relations)
    if found is None:
        return None
    s, e, _ = found
    left, rel, right = words[:s], words[s:e], words[e:]
    copula: list[str] = []
    if left and _norm(left[-1]) in COPULAS:
        copula, left = [left[-1]], left[:-1]
    if not left or not right:
        return None
    capital = left[0][:1].isupper()
    if capital:
        left = [left[0][:1].lower() + left[0][1:], *left[1:]]
        right = [right[0][:1].upper() + right[0][1:], *right[1:]]
    out = right + copula + rel + left
    result = _join(out, tail)
    return None if result == _join(words, tail) else result
