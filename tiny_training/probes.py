"""Zero-shot probes the training script scores at the end of a run (into ``TRAINING.md``).

They are a quick report card drawn like the checklists' scenes (224 px, resized by the eval
transform), not a replacement for the bundled checklists: most probes use only held-out
colour+shape pairs, so they measure generalisation to combinations never trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from pytest_vlcheck.images.scenes import BACKGROUNDS, COLORS, OBJECT_COLORS, SHAPES
from tiny_training.data import (
    HELD_OUT_PAIRS,
    allowed_colors,
    counted,
    place_objects,
    relation,
    with_article,
)

SINGLE_KINDS = ("color/held-out", "shape/held-out", "color/trained", "shape/trained")
KINDS = (*SINGLE_KINDS, "count", "relation", "binding")


@dataclass(frozen=True)
class Probe:
    """One caption-choice question: the true caption against its negatives."""

    kind: str
    scene: dict[str, Any]
    caption: str
    negatives: tuple[str, ...]


def probe_set(seed: int, n: int, canvas: int = 224) -> list[Probe]:
    """``n`` probes of each kind in ``KINDS``, drawn at the checklists' canvas size.

    ``color/held-out``: one object of a held-out pair; its colour among all object colours.
    ``shape/held-out``: the same scene kind; its shape among all shapes.
    ``color/trained``, ``shape/trained``: the same on pairs seen in training (new scenes).
    On held-out pairs: ``count`` (2, 3 or 4 copies, against the other two counts),
    ``relation`` (``A left of B`` against ``B left of A``), ``binding`` (``a red star and a
    blue circle`` against the colours swapped between the shapes).
    """
    rng = random.Random(seed)
    held = sorted(HELD_OUT_PAIRS)
    seen = sorted((c, s) for c in OBJECT_COLORS for s in SHAPES if (c, s) not in HELD_OUT_PAIRS)
    probes: list[Probe] = []

    def one(color: str, shape: str, side: float) -> dict[str, Any]:
        return {"shape": shape, "color": color, "size": round(side, 4), "position": [0.5, 0.5]}

    def place(objects: list[dict[str, Any]]) -> bool:
        return place_objects(objects, rng)

    def other_kind(background: str, color: str, shape: str) -> tuple[str, str]:
        while True:
            s2 = rng.choice([s for s in SHAPES if s != shape])
            colors = [c for c in allowed_colors(s2, background) if c != color]
            if colors:
                return rng.choice(colors), s2

    for kind in KINDS:
        made = 0
        while made < n:
            color, shape = rng.choice(seen if kind.endswith("/trained") else held)
            background = rng.choice([b for b in BACKGROUNDS if COLORS[b] != COLORS[color]])
            main = one(color, shape, rng.uniform(0.15, 0.35))
            objects = [main]
            if kind in SINGLE_KINDS:
                caption = with_article(f"{color} {shape}")
                if kind.startswith("color"):
                    negs = tuple(with_article(f"{c} {shape}") for c in OBJECT_COLORS if c != color)
                else:
                    negs = tuple(with_article(f"{color} {s}") for s in SHAPES if s != shape)
            elif kind == "count":
                k = rng.choice((2, 3, 4))
                side = rng.uniform(0.1, 0.16)
                objects = [one(color, shape, side) for _ in range(k)]
                caption = counted(k, color, shape)
                negs = tuple(counted(j, color, shape) for j in (2, 3, 4) if j != k)
            else:
                c2, s2 = other_kind(background, color, shape)
                objects = [main, one(c2, s2, rng.uniform(0.15, 0.3))]
                first, other = with_article(f"{color} {shape}"), with_article(f"{c2} {s2}")
                if kind == "relation":
                    caption, negs = "", ()
                else:
                    caption = f"{first} and {other}"
                    swapped = with_article(f"{c2} {shape}"), with_article(f"{color} {s2}")
                    negs = (" and ".join(swapped),)
            if not place(objects):
                continue
            if kind == "relation":
                rel = relation(objects[0], objects[1])
                if rel is None:
                    continue
                caption, negs = f"{first} {rel} {other}", (f"{other} {rel} {first}",)
            scene = {"size": canvas, "background": background, "objects": objects}
            probes.append(Probe(kind, scene, caption, negs))
            made += 1
    return probes
