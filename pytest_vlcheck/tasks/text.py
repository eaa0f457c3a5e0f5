"""``text``: an anchor text, a positive text and k >= 1 negatives, compared as texts only.

s(anchor, positive) > max_j s(anchor, negative_j), strictly, where s is the cosine of the
model's text embeddings (no image is loaded). With ``symmetric: true`` the positive must also
win as the anchor: s(positive, anchor) > max_j s(positive, negative_j) (SugarCrepe++'s
text-to-text score, TOT). Cosine similarity is symmetric, so both conditions share the one
anchor-positive score. Chance (independent random scores) is 1/(k+1), or 1/(2k+1) when
symmetric: the shared score must be the largest of 2k+1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.example_fields import ParseContext
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.base import BaseTask, choose_one, mapping_of, mean_chance, parse_ties
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks


@dataclass(frozen=True)
class TextExample:
    """An anchor text, the text that means the same (positive) and texts that do not."""

    id: str
    anchor: str
    positive: str
    negatives: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "anchor": {"type": "string", "description": "the text the others are compared with"},
        "positive": {"type": "string", "description": "a text that means the same as the anchor"},
        "negatives": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "texts that must be less similar to the anchor than the positive",
        },
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["anchor", "positive", "negatives"],
    "additionalProperties": False,
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class TextTask(BaseTask):
    """Text-to-text choice: the positive must be the anchor's nearest text."""

    name = "text"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("anchor", "positive", "negatives")
    setting_keys = ("ties", "symmetric")
    generation = GenerationRules(generates=False)
    text_only = True

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``ties`` and ``symmetric`` (the positive must also win as the anchor)."""
        return {**parse_ties(fields), "symmetric": fields.flag("symmetric", False)}

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> TextExample:
        """``anchor``, ``positive`` and ``negatives``: texts only."""
        return TextExample(
            example_id,
            fields.text("anchor"),
            fields.text("positive"),
            fields.strings("negatives"),
            tags,
            line,
        )

    def grid(self, example: TextExample) -> Grid:
        """No image; the texts in order anchor, positive, negatives (scored texts x texts)."""
        return (), (example.anchor, example.positive, *example.negatives)

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """No image; anchor, positive and the negatives."""
        return 0, 2 + len(raw["negatives"])

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> float:
        """1/(k+1) per example, or 1/(2k+1) when symmetric, averaged."""
        symmetric = mapping_of(settings, "symmetric", False)
        negatives = [s[1] - 2 for s in shapes]
        return mean_chance([(2 * k if symmetric else k) + 1 for k in negatives])

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[TextExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """s(anchor, positive) against s(anchor, negatives) (and s(positive, negatives))."""
        symmetric = mapping_of(settings, "symmetric", False)
        rows = (0, 1) if symmetric else (0,)
        outcome = choose_one(
            [g[0, 1] for g in grids],
            [np.concatenate([g[r, 2:] for r in rows]) for g in grids],
            mapping_of(settings, "ties", "fail"),
        )
        chance = self.chance(settings, [(0, g.shape[1]) for g in grids])
        return Judgement(outcome.correct, outcome.ties, {}, chance)

    def describe_failure(self, example: TextExample, grid: np.ndarray) -> str:
        """The anchor-positive score against each negative's scores with both."""
        negatives = ", ".join(
            f"{text!r} {grid[0, j]:.4f}/{grid[1, j]:.4f}"
            for j, text in enumerate(example.negatives, start=2)
        )
        return (
            f"{example.anchor!r} ~ {example.positive!r} {grid[0, 1]:.4f}; negatives "
            f"(with anchor/positive): {negatives}"
        )

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The anchor and the positive are the true pair (no image)."""
        return ({0, 1} if n_texts >= 2 else set()), set(), set()

    def rows(self, example: TextExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The anchor, the positive, then the negatives; no image."""
        return [
            ("anchor", [example.anchor], []),
            ("positive", [example.positive], []),
            ("negatives", list(example.negatives), []),
        ]

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """Never called: ``generation.generates`` is False (generators refuse the kind)."""
        raise NotImplementedError("text tests are written out, not generated")


TEXT = TextTask()
