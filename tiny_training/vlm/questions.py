"""Question-answer pairs about a rendered scene, from the renderer's truth, in the agreed phrasing
of the generative suite (``checklists_generative/``; the same templates, answers as written).

``ask(kind, scene, rng)`` asks one question of ``kind`` about a scene, or returns None when the
scene cannot answer it (``What color is the star?`` of a scene with two stars or none). The
kinds, and what a right answer needs:

- ``caption``: VQAScore's prompt (the ``vqa:`` backend's default question) on a caption in the
  CLIP checklists' phrasing, true (``Yes``) or made false (``No``) by one change: a shape
  swapped for an absent one, a colour for one no such shape has, a count for a wrong one, a
  relation for its opposite, or the two sides of ``inside`` swapped.
- ``count`` / ``count_choice``: ``How many {shapes} are there?``: the digit, or its letter
  among ``1``..``4`` shuffled.
- ``color`` / ``color_choice``: ``What color is the {shape}?`` (its shape once in the scene):
  the colour, or its letter among 3-4 colours shuffled.
- ``existence``: ``Is there a {shape} in the image?`` with a present or an absent shape.
- ``negation``: ``Is the {shape} not {color}?``: ``Yes`` when its colour differs.
- ``relation``: ``Is the {a.color} {a.shape} {relation} the {b.color} {b.shape}?``, true or
  the relation's opposite or the two objects swapped.

Every yes/no kind is asked true or false with equal odds, and a count's answer is drawn
uniformly from 1-4 where the scene allows (the caller picks scenes; see ``ScenePool``).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck.images.scenes import OBJECT_COLORS, SHAPE_PLURALS, SHAPES
from pytest_vlcheck.metrics.answers import LETTERS
from pytest_vlcheck.models.backends.vqa_prompt import VqaPrompt
from pytest_vlcheck.tasks.asking import fill_prompt
from pytest_vlcheck.tasks.choice import LETTERED_PROMPT, lettered
from tiny_training.data import NUMBER_WORDS, relation

KINDS = (
    "caption",
    "count",
    "count_choice",
    "color",
    "color_choice",
    "existence",
    "negation",
    "relation",
)
OPPOSITE = {
    "to the left of": "to the right of",
    "to the right of": "to the left of",
    "above": "below",
    "below": "above",
}
YES, NO = "Yes", "No"
COUNTS = (1, 2, 3, 4)


@dataclass(frozen=True)
class Question:
    """One training or probe item: the prompt shown after the image and the exact answer."""

    kind: str
    prompt: str
    answer: str


def ask(kind: str, scene: Mapping[str, Any], rng: random.Random, **given: Any) -> Question | None:
    """One question of ``kind`` about ``scene`` (its ``objects``), or None when it has none.

    ``given`` passes what the caller already chose: ``caption`` (a true caption of the scene,
    for the ``caption`` kind) and ``count`` (the wanted answer of a count kind).
    """
    objects = list(scene["objects"])
    if kind == "caption":
        return _caption(objects, given["caption"], rng)
    if kind in ("count", "count_choice"):
        return _count(kind, objects, int(given.get("count", 0)), rng)
    if kind in ("color", "color_choice", "negation"):
        return _single(kind, objects, rng)
    if kind == "existence":
        return _existence(objects, rng)
    if kind == "relation":
        return _relation(objects, rng)
    raise ValueError(f"unknown question kind {kind!r}; expected one of {KINDS}")


def shape_counts(objects: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """How many objects of each shape (any colour) a scene holds."""
    return Counter(o["shape"] for o in objects)


def choice_prompt(question: str, options: Sequence[str]) -> str:
    """The ``choice`` kind's default lettered prompt."""
    return fill_prompt(LETTERED_PROMPT, question, lettered(options))


def _yes_no(kind: str, question: str, truth: bool) -> Question:
    return Question(kind, question, YES if truth else NO)


def _count(
    kind: str, objects: list[dict[str, Any]], want: int, rng: random.Random
) -> Question | None:
    counts = shape_counts(objects)
    shapes = sorted(s for s, k in counts.items() if k == want or (not want and k in COUNTS))
    if not shapes:
        return None
    shape = rng.choice(shapes)
    question = f"How many {SHAPE_PLURALS[shape]} are there?"
    answer = str(counts[shape])
    if kind == "count":
        return Question(kind, question, answer)
    options = [str(k) for k in COUNTS]
    rng.shuffle(options)
    return Question(kind, choice_prompt(question, options), LETTERS[options.index(answer)])


def _single(kind: str, objects: list[dict[str, Any]], rng: random.Random) -> Question | None:
    """A colour or negation question about a shape the scene holds once."""
    counts = shape_counts(objects)
    singles = [o for o in objects if counts[o["shape"]] == 1]
    if not singles:
        return None
    obj = rng.choice(singles)
    shape, color = obj["shape"], obj["color"]
    others = [c for c in OBJECT_COLORS if c != color]
    if kind == "negation":
        truth = rng.random() < 0.5
        named = rng.choice(others) if truth else color
        return _yes_no(kind, f"Is the {shape} not {named}?", truth)
    question = f"What color is the {shape}?"
    if kind == "color":
        return Question(kind, question, color)
    options = [color, *rng.sample(others, rng.choice((2, 3)))]
    rng.shuffle(options)
    return Question(kind, choice_prompt(question, options), LETTERS[options.index(color)])


def _existence(objects: list[dict[str, Any]], rng: random.Random) -> Question:
    present = sorted({o["shape"] for o in objects})
    absent = [s for s in SHAPES if s not in present]
    truth = rng.random() < 0.5 or not absent
    shape = rng.choice(present if truth else absent)
    return _yes_no("existence", f"Is there a {shape} in the image?", truth)


def pair_relations(objects: Sequence[Mapping[str, Any]]) -> list[tuple[Any, str, Any]]:
    """(a, relation, b) for every ordered pair of objects, each the only one of its colour and
    shape, with a clear relation: ``inside`` for a small object drawn within a big one, else
    ``data.relation``'s."""
    pairs = Counter((o["color"], o["shape"]) for o in objects)
    named = [o for o in objects if pairs[(o["color"], o["shape"])] == 1]
    out = []
    for a in named:
        for b in named:
            if a is b:
                continue
            rel = "inside" if _inside(a, b) else relation(a, b)
            if rel is not None and not _inside(b, a):
                out.append((a, rel, b))
    return out


def _inside(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``a``'s box lies within ``b``'s."""
    (ax, ay), (bx, by) = a["position"], b["position"]
    room = (b["size"] - a["size"]) / 2
    return a["size"] < b["size"] and abs(ax - bx) <= room and abs(ay - by) <= room


def _relation(objects: list[dict[str, Any]], rng: random.Random) -> Question | None:
    found = pair_relations(objects)
    if not found:
        return None
    a, rel, b = rng.choice(found)
    truth = rng.random() < 0.5
    if not truth:
        if rel == "inside" or rng.random() < 0.5:
            a, b = b, a
        else:
            rel = OPPOSITE[rel]
    question = f"Is the {a['color']} {a['shape']} {rel} the {b['color']} {b['shape']}?"
    return _yes_no("relation", question, truth)


def _caption(objects: list[dict[str, Any]], caption: str, rng: random.Random) -> Question:
    """VQAScore's prompt on ``caption`` (``Yes``) or on a falsified copy (``No``)."""
    truth = rng.random() < 0.5
    text = caption if truth else falsified(caption, objects, rng)
    return _yes_no("caption", VqaPrompt().ask(text)[0], truth)


_PLURAL_SHAPE = {p: s for s, p in SHAPE_PLURALS.items()}
_NUMBERS = {w: k for k, w in NUMBER_WORDS.items()}


def falsified(caption: str, objects: list[dict[str, Any]], rng: random.Random) -> str:
    """``caption`` made false by one change (see the module docstring); a shape swap when no
    other change applies."""
    from tiny_training.data import shape_negative

    words = caption.split(" ")
    pairs = Counter((o["color"], o["shape"]) for o in objects)
    changes = []
    for i, word in enumerate(words):
        shape = word if word in SHAPES else _PLURAL_SHAPE.get(word)
        if shape is None or i == 0 or words[i - 1] not in OBJECT_COLORS:
            continue
        wrong = [c for c in OBJECT_COLORS if not pairs[(c, shape)]]
        if wrong:
            changes.append(("color", i - 1, wrong))
        have = pairs[(words[i - 1], shape)]
        if i >= 2 and words[i - 2] in _NUMBERS and have > 1:  # plural counts stay plural
            changes.append(("count", i - 2, [w for w, k in _NUMBERS.items() if k not in (1, have)]))
    text = f" {caption} "
    for rel, opposite in OPPOSITE.items():
        if f" {rel} " in text:
            changes.append(("relation", rel, [opposite]))
    if " inside " in text:
        changes.append(("inside", 0, [""]))
    if not changes or rng.random() < 0.3:
        return shape_negative(caption, objects, rng)
    what, where, options = rng.choice(changes)
    pick = rng.choice(options)
    if what == "relation":
        return text.replace(f" {where} ", f" {pick} ", 1).strip()
    if what == "inside":
        inner, outer = caption.split(" inside ", 1)
        return f"{outer} inside {inner}"
    words[int(where)] = pick
    return " ".join(words)
