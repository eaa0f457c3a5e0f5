"""``caption``: one image, its true caption and k >= 1 negatives; the caption must win.

s(I, caption) > max_j s(I, negative_j), strictly (VL-CheckList, ARO, SugarCrepe).
Chance is the mean of 1/(k+1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.base import (
    BaseTask,
    choose_one,
    mapping_of,
    mean_chance,
    parse_ties,
    scored_texts,
)
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale


@dataclass(frozen=True)
class CaptionExample:
    """One image; the true caption must outscore every negative caption."""

    id: str
    image: ImageRef
    caption: str
    negatives: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


class CaptionTask(BaseTask):
    """Image-to-text choice among a true caption and its negatives."""

    name = "caption"
    example_keys = ("image", "caption", "negatives")
    setting_keys = ("ties",)
    generation = GenerationRules(text_negatives=True)

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``ties``: which of tied candidates wins."""
        return parse_ties(fields)

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> CaptionExample:
        """``image``, ``caption`` and a non-empty list of ``negatives``."""
        image = image_at(context, fields, "image")
        return CaptionExample(
            example_id, image, fields.text("caption"), fields.strings("negatives"), tags, line
        )

    def grid(self, example: CaptionExample) -> Grid:
        """One image x (true caption, negatives...)."""
        return (example.image,), (example.caption, *example.negatives)

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """One image, the caption and its negatives."""
        return 1, 1 + len(raw["negatives"])

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, int]]) -> float:
        """Mean of 1/(k+1) over examples."""
        return mean_chance([texts for _, texts in shapes])

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[CaptionExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """The true caption (column 0) must beat every negative."""
        outcome = choose_one(
            [g[0, 0] for g in grids],
            [g[0, 1:] for g in grids],
            mapping_of(settings, "ties", "fail"),
        )
        chance = self.chance(settings, [g.shape for g in grids])
        return Judgement(outcome.correct, outcome.ties, {}, chance)

    def describe_failure(self, example: CaptionExample, grid: np.ndarray) -> str:
        """The image, then every caption with its score."""
        _, texts = self.grid(example)
        return f"{example.image.describe()}: {scored_texts(texts, grid[0])} (first is true)"

    def true_marks(self, n_images: int, n_texts: int) -> tuple[set, set, set]:
        """The first text is true for the image."""
        if not n_texts:
            return set(), set(), set()
        return {0}, set(), {(i, 0) for i in range(n_images)}

    def rows(self, example: CaptionExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The caption with its image, then the negatives."""
        return [
            ("caption", [example.caption], [example.image]),
            ("negatives", list(example.negatives), []),
        ]

    def text_choices(self, example: CaptionExample) -> list[tuple[str, tuple[str, ...]]]:
        """The caption against its negatives."""
        return [(example.caption, example.negatives)]

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """The true member's scene and caption; the others' captions plus word shuffles."""
        truth = candidates.truth
        negatives = [candidates.captions[i] for i in candidates.others]
        negatives += candidates.text_negatives([candidates.captions[truth], *negatives])
        return [
            {
                "id": candidates.example_id,
                "image": {"scene": candidates.scenes[truth]},
                "caption": candidates.captions[truth],
                "negatives": negatives,
                "tags": dict(candidates.tags),
            }
        ]


CAPTION = CaptionTask()
