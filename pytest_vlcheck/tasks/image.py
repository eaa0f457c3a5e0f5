"""``image``: one text (or a prompt ensemble), its true image and k >= 1 distractor images.

s(true, T) > max_j s(distractor_j, T), strictly; with several prompts an image's score is
its mean similarity over them (Compun). Chance is the mean of 1/(k+1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_vlcheck import metrics
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at, image_list
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.base import (
    BaseTask,
    choose_by_rules,
    mapping_of,
    mean_chance,
    position_of,
)
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks


@dataclass(frozen=True)
class ImageExample:
    """One text (or prompt ensemble); the true image must outscore every distractor.

    With several prompts, an image's score is the mean of its similarity to each prompt.
    """

    id: str
    texts: tuple[str, ...]
    image: ImageRef
    distractors: tuple[ImageRef, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0
    ties: str | None = None
    position: int = 0
    """Where the true image stood among the distractors in the source's order (0: before
    all); only ``ties: order`` reads it."""
    """This example's tie rule when it differs from the test's (MMVP: a tie picks image 2,
    which is the true one for half the statements)."""


EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ],
            "description": "a text, or prompts scored by their mean similarity",
        },
        "image": {"$ref": "#/$defs/image"},
        "distractors": {"type": "array", "items": {"$ref": "#/$defs/image"}, "minItems": 1},
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
        "ties": {
            "enum": list(metrics.ORDERED_TIE_RULES),
            "description": "this example's tie rule, instead of the test's ties:",
        },
        "position": {
            "type": "integer",
            "minimum": 0,
            "description": "ties: order: the true image's place among the distractors in the "
            "source's order (default 0, before every distractor)",
        },
    },
    "required": ["text", "image", "distractors"],
    "additionalProperties": False,
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class ImageTask(BaseTask):
    """Text-to-image choice among the true image and its distractors."""

    name = "image"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("text", "image", "distractors")
    optional_example_keys = ("ties", "position")
    setting_keys = ("ties",)
    generation = GenerationRules(takes_prompts=True)

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``ties``: which of tied candidates wins (``order``: the first in the source's
        order)."""
        return {"ties": fields.choice("ties", metrics.ORDERED_TIE_RULES, "fail")}

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> ImageExample:
        """``text`` (a string or a list of prompts), ``image``, ``distractors`` and an
        optional ``ties`` rule of the example's own."""
        if isinstance(fields.raw("text"), list):
            texts = fields.strings("text")
        else:
            texts = (fields.text("text"),)
        distractors = image_list(context, fields, "distractors")
        image = image_at(context, fields, "image")
        ties = fields.choice("ties", metrics.ORDERED_TIE_RULES) if fields.has("ties") else None
        position = position_of(fields, len(distractors)) if fields.has("position") else 0
        return ImageExample(example_id, texts, image, distractors, tags, line, ties, position)

    def grid(self, example: ImageExample) -> Grid:
        """(true image, distractors...) x prompts."""
        return (example.image, *example.distractors), example.texts

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """The true image and its distractors, by the prompts."""
        text = raw.get("text")
        return 1 + len(raw["distractors"]), len(text) if isinstance(text, list) else 1

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> float:
        """Mean of 1/(k+1) over examples."""
        return mean_chance([images for images, _ in shapes])

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[ImageExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """The true image (row 0) must beat every distractor on the prompts' mean score."""
        per_image = [metrics.prompt_ensemble(g) for g in grids]
        rule = mapping_of(settings, "ties", "fail")
        outcome = choose_by_rules(
            [s[0] for s in per_image],
            [s[1:] for s in per_image],
            [getattr(e, "ties", None) or rule for e in examples],
            [getattr(e, "position", 0) for e in examples],
        )
        chance = self.chance(settings, [g.shape for g in grids])
        return Judgement(outcome.correct, outcome.ties, {}, chance)

    def describe_failure(self, example: ImageExample, grid: np.ndarray) -> str:
        """The text(s), then every image with its (mean) score."""
        refs, texts = self.grid(example)
        means = grid.astype(np.float64).mean(axis=1)
        cells = ", ".join(f"{r.describe()} {means[i]:.4f}" for i, r in enumerate(refs))
        return f"{' | '.join(texts)!r}: {cells} (first is true)"

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The first image is true for every prompt."""
        if not n_images:
            return set(), set(), set()
        return set(), {0}, {(0, j) for j in range(n_texts)}

    def rows(self, example: ImageExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The text with its image, then the distractors."""
        return [
            ("text", list(example.texts), [example.image]),
            ("distractors", [], list(example.distractors)),
        ]

    def cluster_key(self, example: ImageExample) -> str:
        """The text (its prompts) the images are chosen for."""
        return "text:" + "\n".join(example.texts)

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """The true member's text (its prompts when given) against the others' scenes."""
        truth = candidates.truth
        prompts = candidates.texts[truth]
        text: str | list[str] = list(prompts) if prompts else candidates.captions[truth]
        return [
            {
                "id": candidates.example_id,
                "text": text,
                "image": {"scene": candidates.scenes[truth]},
                "distractors": [{"scene": candidates.scenes[i]} for i in candidates.others],
                "tags": dict(candidates.tags),
            }
        ]


IMAGE = ImageTask()
