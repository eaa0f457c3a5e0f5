"""Seeded training data for the ``tiny`` model: random scenes and captions true of them.

Scenes use the scene renderer's lexicons (shapes, object colours, textures, backgrounds) and
captions the bundled checklists' phrasing: ``a circle``, ``a photo of a red circle``,
``there is a star in the picture``, ``a striped red circle``, ``a red circle that is
dotted``, ``a hollow red circle``, ``a big circle and a small star``, ``three red circles``,
``a red circle to the left of a blue star``, ``a red circle inside a blue hexagon``,
``a red circle and a blue star``. Each scene has several true captions; a sample takes one
at random, weighted towards naming objects and colours, which the model therefore learns
best. Every sample also carries a hard negative that swaps one shape word for an absent
shape (:func:`shape_negative`); nothing else ever meets a hard negative (only the other
captions of the batch), so relations, word order and binding stay weak, as in CLIP.

Held out: the colour+shape pairs of ``HELD_OUT_PAIRS`` are never drawn, in any object of
any scene, so checklist scenes with those pairs are unlike anything trained on. A sampler
can also be given the :func:`scene_key` values of the bundled checklists' scenes
(``exclude``; the training script does this) and then never yields one of them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck.images.scenes import (
    BACKGROUNDS,
    COLORS,
    OBJECT_COLORS,
    SHAPE_PLURALS,
    SHAPES,
    SIZE_WORDS,
    TEXTURES,
    canvas_size,
)

TRAIN_CANVAS = 96
"""Canvas the training scenes are drawn at: the model's input size, so no resize is needed.
The renderer box-filters a supersampled grid, so a scene drawn at 96 px looks like the same
scene drawn at 224 px and resized by the eval transform (checked in
``tests/models/test_tiny.py``)."""

HELD_OUT_PAIRS: frozenset[tuple[str, str]] = frozenset(
    {
        ("blue", "circle"),
        ("brown", "cross"),
        ("pink", "diamond"),
        ("purple", "heart"),
        ("orange", "hexagon"),
        ("red", "square"),
        ("green", "star"),
        ("yellow", "triangle"),
    }
)
"""(colour, shape) pairs no training scene contains: one per shape, each with another
colour, so every colour and every shape is still trained, just not in these pairs."""

NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}
RELATIONS = ("to the left of", "to the right of", "above", "below")
STATE_WORDS = ("filled", "hollow")
GAP = 0.025  # minimum free space between two objects' boxes, fraction of the canvas
# Object sides (fraction of the canvas width), roughly VL-CheckList's small/medium/large.
SIDE_RANGES = {"small": (0.042, 0.07), "medium": (0.07, 0.18), "large": (0.2, 0.4)}
SIDE_ODDS = (0.1, 0.4, 0.5)
# Scene kinds and their odds; see TrainingSampler._scene.
KINDS = {"objects": 0.6, "count": 0.16, "sized_pair": 0.1, "inside": 0.08, "relation": 0.06}


@dataclass(frozen=True)
class Sample:
    """One training pair: a scene spec (for ``render_scene``) and a caption true of it.

    ``negative`` is the caption with one shape word replaced by a shape absent from the
    scene (``a red star`` -> ``a red heart``): a hard negative for this image only.
    """

    scene: dict[str, Any]
    caption: str
    negative: str


def scene_key(spec: Mapping[str, Any]) -> str:
    """A scene's identity regardless of canvas resolution and of how defaults are spelled.

    Two specs with equal keys draw the same picture up to resolution: same background and
    the same objects in the same order, sizes as fractions (size words resolved), defaults
    filled in, numbers rounded to 1e-4.
    """
    objects = []
    for obj in spec.get("objects", []):
        size = obj["size"]
        frac = SIZE_WORDS[size] if isinstance(size, str) else float(size)
        objects.append(
            {
                "shape": obj["shape"],
                "color": _color_value(obj["color"]),
                "size": round(frac, 4),
                "position": [round(float(p), 4) for p in obj["position"]],
                "texture": obj.get("texture", "solid"),
                "hollow": bool(obj.get("hollow", False)),
            }
        )
    width, height = canvas_size(spec)
    key = {
        "aspect": round(height / width, 4),
        "background": _color_value(spec.get("background", "white")),
        "objects": objects,
    }
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def scene_keys(specs: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """:func:`scene_key` of every spec."""
    return frozenset(scene_key(s) for s in specs)


def _color_value(value: Any) -> list[int]:
    rgb = COLORS[value] if isinstance(value, str) else value
    return [int(c) for c in rgb]


def allowed_colors(shape: str, background: str) -> list[str]:
    """Object colours a training scene may give ``shape`` on ``background``.

    Never the background's own colour (the object would vanish), never a held-out pair.
    """
    return [
        c
        for c in OBJECT_COLORS
        if (c, shape) not in HELD_OUT_PAIRS and COLORS[c] != COLORS[background]
    ]


def with_article(words: str) -> str:
    """``a red circle``, ``an orange circle``."""
    return f"{'an' if words[0] in 'aeiou' else 'a'} {words}"


def counted(k: int, color: str, shape: str) -> str:
    """``one red circle``, ``two red circles``."""
    noun = shape if k == 1 else SHAPE_PLURALS[shape]
    return f"{NUMBER_WORDS[k]} {color} {noun}"


def noun_phrase(obj: Mapping[str, Any], rng: random.Random, style: str | None = None) -> str:
    """The object as a noun phrase, in one of the checklists' styles.

    ``shape`` (``a star``), ``color`` (``a red star``), ``detail`` (texture or state too:
    ``a striped red star``, ``a red star that is striped``, ``a hollow red star``,
    ``a filled red star``); ``None`` picks one at random.
    """
    style = style or rng.choices(("shape", "color", "detail"), weights=(0.3, 0.45, 0.25))[0]
    if style == "shape":
        return with_article(obj["shape"])
    core = f"{obj['color']} {obj['shape']}"
    if style == "color":
        return with_article(core)
    texture = obj.get("texture", "solid")
    if texture != "solid" and rng.random() < 0.7:
        if rng.random() < 0.3:
            return f"{with_article(core)} that is {texture}"
        return with_article(f"{texture} {core}")
    if texture == "solid":
        return with_article(f"{STATE_WORDS[int(bool(obj.get('hollow')))]} {core}")
    return with_article(core)


def framed(phrase: str, rng: random.Random, single: bool) -> str:
    """The checklists' caption frames: bare, ``a photo of ...``, ``there is ... in the picture``."""
    odds = (0.5, 0.3, 0.2) if single else (0.65, 0.35, 0.0)
    frame = rng.choices(("{}", "a photo of {}", "there is {} in the picture"), weights=odds)[0]
    return frame.format(phrase)


_SHAPE_WORDS = {
    **{s: (s, False) for s in SHAPES},
    **{p: (s, True) for s, p in SHAPE_PLURALS.items()},
}


def shape_negative(caption: str, objects: list[dict[str, Any]], rng: random.Random) -> str:
    """``caption`` with one shape word swapped for a shape no object in the scene has.

    Singular stays singular and plural plural, so only the shape tells the two apart. The
    new colour+shape pair is never a held-out one: those stay out of training texts too.
    """
    words = caption.split(" ")
    spots = [i for i, w in enumerate(words) if w in _SHAPE_WORDS]
    present = {o["shape"] for o in objects}
    i = rng.choice(spots)
    color = words[i - 1] if i >= 1 else ""
    absent = [s for s in SHAPES if s not in present and (color, s) not in HELD_OUT_PAIRS]
    plural = _SHAPE_WORDS[words[i]][1]
    new = rng.choice(absent)
    words[i] = SHAPE_PLURALS[new] if plural else new
    if i >= 1 and words[i - 1] in ("a", "an") and not plural:
        words[i - 1] = "an" if new[0] in "aeiou" else "a"
    return " ".join(words)


def relation(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """The clear spatial relation of object ``a`` to ``b``, or None when there is none.

    The boxes must be apart along the axis named, and the offset along that axis at least
    twice the offset along the other, so that a person would say the same.
    """
    (ax, ay), (bx, by) = a["position"], b["position"]
    dx, dy = bx - ax, by - ay
    reach = (a["size"] + b["size"]) / 2
    if abs(dx) >= 2 * abs(dy) and abs(dx) > reach:
        return RELATIONS[0] if dx > 0 else RELATIONS[1]
    if abs(dy) >= 2 * abs(dx) and abs(dy) > reach:
        return RELATIONS[2] if dy > 0 else RELATIONS[3]
    return None


class TrainingSampler:
    """An endless, seeded stream of (scene, caption) pairs.

    Same seed, same stream. ``exclude`` holds :func:`scene_key` values the sampler must never
    yield (the bundled checklists' scenes); a draw that hits one is drawn again and counted
    in ``rejected``.
    """

    def __init__(
        self, seed: int, exclude: Collection[str] = (), canvas: int = TRAIN_CANVAS
    ) -> None:
        self._rng = random.Random(seed)
        self._exclude = frozenset(exclude)
        self._canvas = canvas
        self.rejected = 0

    def batch(self, n: int) -> list[Sample]:
        """``n`` samples."""
        return [self.draw() for _ in range(n)]

    def draw(self) -> Sample:
        """One sample."""
        while True:
            background = self._rng.choice(BACKGROUNDS)
            objects, captions = self._scene(background)
            scene = {"size": self._canvas, "background": background, "objects": objects}
            if scene_key(scene) in self._exclude:
                self.rejected += 1
                continue
            caption = self._rng.choice(captions)
            return Sample(scene, caption, shape_negative(caption, objects, self._rng))

    # -- scenes

    def _scene(self, background: str) -> tuple[list[dict[str, Any]], list[str]]:
        """Objects of one scene and its true captions (repeats weight a caption up).

        A kind that cannot be made (objects do not fit, colours clash) is given up for a newly
        drawn kind.
        """
        rng = self._rng
        while True:
            kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
            if kind == "count":
                made = self._count_scene(background)
            elif kind == "sized_pair":
                made = self._sized_pair(background)
            elif kind == "inside":
                made = self._inside(background)
            elif kind == "relation":
                made = self._relation_pair(background)
            else:
                made = self._objects(background)
            if made is not None:
                return made

    def _object(self, background: str, side: float) -> dict[str, Any]:
        rng = self._rng
        shape = rng.choice(SHAPES)
        obj: dict[str, Any] = {
            "shape": shape,
            "color": rng.choice(allowed_colors(shape, background)),
            "size": round(side, 4),
            "position": [0.5, 0.5],
        }
        if rng.random() < 0.2:
            obj["texture"] = rng.choice(TEXTURES[1:])
        elif rng.random() < 0.1:
            obj["hollow"] = True
        return obj

    def _side(self) -> float:
        lo, hi = SIDE_RANGES[self._rng.choices(list(SIDE_RANGES), weights=SIDE_ODDS)[0]]
        return self._rng.uniform(lo, hi)

    def _place(self, objects: list[dict[str, Any]]) -> bool:
        """Most objects lie wholly on the canvas; some hang over an edge by up to a fifth of
        their side, as the checklists' margin objects do."""
        return place_objects(objects, self._rng, overhang=0.2)

    def _objects(self, background: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        """One to three objects; captions name one, all, or two in a relation."""
        rng = self._rng
        n = rng.choices((1, 2, 3), weights=(0.6, 0.25, 0.15))[0]
        objects = [self._object(background, self._side()) for _ in range(n)]
        if not self._place(objects):
            return None
        if n == 1:
            o = objects[0]
            return objects, [framed(noun_phrase(o, rng), rng, single=True) for _ in range(3)]
        captions = [framed(noun_phrase(o, rng), rng, single=True) for o in objects]
        captions += [framed(self._all_named(objects), rng, single=False)] * 2
        a, b = rng.sample(objects, 2)
        rel = relation(a, b)
        if rel is not None and (a["color"], a["shape"]) != (b["color"], b["shape"]):
            captions.append(f"{noun_phrase(a, rng, 'color')} {rel} {noun_phrase(b, rng, 'color')}")
        return objects, captions

    def _all_named(self, objects: list[dict[str, Any]]) -> str:
        """``a red circle and two blue stars``: copies of one kind are counted."""
        rng = self._rng
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for o in rng.sample(objects, len(objects)):
            groups.setdefault((o["color"], o["shape"]), []).append(o)
        style = rng.choice(("shape", "color", "color", None))
        parts = []
        for (color, shape), g in groups.items():
            if len(g) > 1:
                parts.append(counted(len(g), color, shape))
            else:
                parts.append(noun_phrase(g[0], rng, style))
        return " and ".join(parts)

    def _count_scene(self, background: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        """One to four copies of one object (same size), sometimes with one other object."""
        rng = self._rng
        k = rng.choice((1, 2, 3, 4))
        side = rng.uniform(0.1, 0.16)
        first = self._object(background, side)
        objects = [dict(first) for _ in range(k)]
        if rng.random() < 0.25:
            other = self._object(background, side)
            if (other["color"], other["shape"]) == (first["color"], first["shape"]):
                return None
            objects.append(other)
        if not self._place(objects):
            return None
        counts = counted(k, first["color"], first["shape"])
        captions = [
            counts,
            counts,
            f"a photo of {counts}",
            framed(self._all_named(objects), rng, single=False),
        ]
        return objects, captions

    def _sized_pair(self, background: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        """A big and a small object of different shapes: ``a big star and a small circle``."""
        rng = self._rng
        big = self._object(background, rng.uniform(0.28, 0.4))
        small = self._object(background, rng.uniform(0.08, 0.15))
        if big["shape"] == small["shape"]:
            return None
        objects = [big, small] if rng.random() < 0.5 else [small, big]
        if not self._place(objects):
            return None
        words = {id(big): "big", id(small): "small"}
        order = rng.sample(objects, 2)
        with_colors = rng.random() < 0.3
        parts = [
            with_article(f"{words[id(o)]} {o['color'] + ' ' if with_colors else ''}{o['shape']}")
            for o in order
        ]
        captions = [framed(" and ".join(parts), rng, single=False)] * 2
        captions.append(framed(self._all_named(objects), rng, single=False))
        return objects, captions

    def _inside(self, background: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        """A small object drawn inside a big one of another colour."""
        rng = self._rng
        container = self._object(background, rng.uniform(0.45, 0.65))
        inner = self._object(background, container["size"] * rng.uniform(0.25, 0.35))
        if inner["color"] == container["color"]:
            return None
        container.pop("texture", None)
        container.pop("hollow", None)
        inner.pop("hollow", None)
        cx = round(rng.uniform(0.4, 0.6), 4)
        cy = round(rng.uniform(0.4, 0.6), 4)
        container["position"] = [cx, cy]
        inner["position"] = [cx, round(cy + container["size"] * rng.uniform(0.0, 0.1), 4)]
        a, b = noun_phrase(inner, rng, "color"), noun_phrase(container, rng, "color")
        captions = [f"{a} inside {b}", f"{a} inside {b}", framed(a, rng, single=True)]
        return [container, inner], captions

    def _relation_pair(self, background: str) -> tuple[list[dict[str, Any]], list[str]] | None:
        """Two objects side by side or one above the other: ``a red star above a blue circle``."""
        rng = self._rng
        a = self._object(background, rng.uniform(0.14, 0.3))
        b = self._object(background, rng.uniform(0.14, 0.3))
        if (a["color"], a["shape"]) == (b["color"], b["shape"]):
            return None
        if not self._place([a, b]):
            return None
        rel = relation(a, b)
        if rel is None:
            return None
        pa, pb = noun_phrase(a, rng, "color"), noun_phrase(b, rng, "color")
        return [a, b], [f"{pa} {rel} {pb}"] * 2 + [framed(f"{pa} and {pb}", rng, single=False)]


def place_objects(
    objects: list[dict[str, Any]], rng: random.Random, *, overhang: float = 0.0
) -> bool:
    """Give every object a free position, boxes ``GAP`` apart; False when one does not fit.

    With ``overhang`` > 0, that share of objects may hang over an edge by up to a fifth of
    their side (the draw is made for every object, so the random stream does not depend on
    the outcome).
    """
    for i, obj in enumerate(objects):
        half = obj["size"] / 2
        inset = half * (0.6 if overhang and rng.random() < overhang else 1.0)
        for _ in range(50):
            x = round(rng.uniform(inset, 1 - inset), 4)
            y = round(rng.uniform(inset, 1 - inset), 4)
            if all(
                max(abs(x - p["position"][0]), abs(y - p["position"][1]))
                > half + p["size"] / 2 + GAP
                for p in objects[:i]
            ):
                obj["position"] = [x, y]
                break
        else:
            return False
    return True
