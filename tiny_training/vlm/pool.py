"""A seeded pool of rendered scenes, drawn once, and a seeded stream of questions about them.

Rendering is the cost a CPU run can save: the pool renders each scene of
``tiny_training.data.TrainingSampler`` once (at the model's input size for training, at the
checklists' 224 px for the probes) and every batch asks new questions of pool scenes. Which
scene a question is about is chosen per kind so that answers are balanced: a count's answer
is uniform over 1-4 (scenes are indexed by the counts they hold), relations come from scenes
with a clear relation, and a colour question is asked of a scene of two or more colours (in a
scene of one colour the answer is that colour wherever the named shape is: the question would
not need the shape at all).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_vlcheck.images.scenes import render_scene
from tiny_training.data import TrainingSampler
from tiny_training.vlm.questions import COUNTS, Question, ask, pair_relations, shape_counts

KIND_ODDS = {
    "caption": 0.25,
    "count": 0.1,
    "count_choice": 0.07,
    "color": 0.12,
    "color_choice": 0.07,
    "existence": 0.14,
    "negation": 0.1,
    "relation": 0.15,
}
"""How often each kind is asked in training (probes ask every kind equally)."""


@dataclass
class ScenePool:
    """``size`` scenes of ``TrainingSampler(seed, exclude)`` drawn at ``canvas`` px: their
    specs, one true caption each, and their pixels (uint8, [size, canvas, canvas, 3])."""

    seed: int
    size: int
    canvas: int
    exclude: Collection[str] = ()
    scenes: list[dict[str, Any]] = field(init=False)
    captions: list[str] = field(init=False)
    pixels: np.ndarray = field(init=False)
    rejected: int = field(init=False)
    _by_count: dict[int, list[int]] = field(init=False)
    _related: list[int] = field(init=False)
    _colorful: list[int] = field(init=False)

    def __post_init__(self) -> None:
        sampler = TrainingSampler(self.seed, exclude=self.exclude, canvas=self.canvas)
        samples = sampler.batch(self.size)
        self.rejected = sampler.rejected
        self.scenes = [s.scene for s in samples]
        self.captions = [s.caption for s in samples]
        self.pixels = np.stack([np.asarray(render_scene(s)) for s in self.scenes])
        self._by_count = {k: [] for k in COUNTS}
        self._related = []
        self._colorful = []
        for i, scene in enumerate(self.scenes):
            if len({o["color"] for o in scene["objects"]}) > 1:
                self._colorful.append(i)
            for k in set(shape_counts(scene["objects"]).values()) & set(COUNTS):
                self._by_count[k].append(i)
            if pair_relations(scene["objects"]):
                self._related.append(i)

    def question(self, kind: str, rng: random.Random) -> tuple[int, Question]:
        """(scene index, question) of ``kind`` about a scene chosen for it."""
        while True:
            given: dict[str, Any] = {}
            if kind.startswith("count"):
                given["count"] = rng.choice(COUNTS)
                index = rng.choice(self._by_count[given["count"]])
            elif kind == "relation":
                index = rng.choice(self._related)
            elif kind in ("color", "color_choice"):
                index = rng.choice(self._colorful)
            else:
                index = rng.randrange(self.size)
            given["caption"] = self.captions[index]
            found = ask(kind, self.scenes[index], rng, **given)
            if found is not None:
                return index, found


CURRICULUM = (("color",), ("color", "existence"))
"""The kinds asked in the first phases of training, before every kind (``training_stream``)."""


def training_stream(
    pool: ScenePool, seed: int, phases: Sequence[int] = (), lookup_scenes: int = 0
) -> Any:
    """An endless seeded stream of (scene index, question). The first ``phases[0]`` questions
    are of the kinds ``CURRICULUM[0]``, the next ``phases[1]`` of ``CURRICULUM[1]``, and so on;
    then every kind. Kinds are drawn by ``KIND_ODDS`` throughout. ``lookup_scenes`` (0: all):
    the first phase asks only about the pool's first ``lookup_scenes`` scenes.

    Why a curriculum: every kind but colour needs the decoder to find the patches of the shape
    a question names and to judge what it finds, and from a random start it learns neither
    (existence stays at 50% for thousands of steps, alone or among all kinds). A colour question
    about a scene of two or more colours rewards finding the named shape's patch directly, since
    the colour there is the answer; with that lookup learnt, existence learns to judge what it
    finds when it is asked beside colour alone; the other kinds build on both.

    Why few scenes first: the lookup is learnt suddenly, and only when the scenes repeat. With
    exact features (each patch's true colour and shape), 1,000 colour steps took the loss to
    0.18 and 0.26 (two seeds) over 2,000 scenes but only to 0.40 and 0.38 over 20,000; on the
    20,000-scene tower's features, asking the first phase about 2,000 of them took held-out
    colour from 53% (2,600 steps, all scenes) to 90% (3,000 steps)."""
    rng = random.Random(seed)
    schedule = [*zip(CURRICULUM, phases, strict=False), (tuple(KIND_ODDS), None)]
    for phase, (kinds, questions) in enumerate(schedule):
        odds = [KIND_ODDS[k] for k in kinds]
        drawn = 0
        while questions is None or drawn < questions:
            index, question = pool.question(rng.choices(kinds, weights=odds)[0], rng)
            if phase == 0 and lookup_scenes and index >= lookup_scenes:
                continue
            yield index, question
            drawn += 1
