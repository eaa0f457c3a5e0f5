"""``caption``: one image, its true caption(s) and k >= 1 negatives; the true ones must win.

s(I, caption) > max_j s(I, negative_j), strictly (VL-CheckList, ARO, SugarCrepe). With
``captions: [...]`` (several true captions) every true caption must outscore every negative:
min_i s(I, caption_i) > max_j s(I, negative_j). The true captions are listed before the
negatives, so ``ties: first`` lets a true caption win a tie with a negative and ``ties: last``
(like ``fail``) gives it to the negative; ties among true captions decide nothing. ``ties:
order`` reads the candidates in the source's column order with the true caption(s) at the
example's ``position`` (default 0): the first maximum wins, so the true caption wins ties with
the negatives after it and loses them to those before it (``torch.argmax`` over NegBench's
columns). Chance is the mean of 1/C(n, t) for t true captions among n texts (1/(k+1) with one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_vlcheck import metrics
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.base import (
    BaseTask,
    choose_by_rules,
    choose_one,
    image_cluster,
    mapping_of,
    position_of,
    scored_texts,
)
from pytest_vlcheck.tasks.caption.example import CaptionExample
from pytest_vlcheck.tasks.caption.plain import plain_caption_examples
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks

EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "image": {"$ref": "#/$defs/image"},
        "caption": {"type": "string", "description": "the true caption"},
        "captions": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "description": "several true captions (instead of caption): "
            "every one must score above every negative",
        },
        "negatives": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "captions that must score below the true one",
        },
        "position": {
            "type": "integer",
            "minimum": 0,
            "description": "ties: order: the true caption's place among the negatives in the "
            "source's column order (default 0, before every negative)",
        },
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["image", "negatives"],
    "additionalProperties": False,
    "oneOf": [{"required": ["caption"]}, {"required": ["captions"]}],
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class CaptionTask(BaseTask):
    """Image-to-text choice among a true caption and its negatives."""

    name = "caption"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("image", "negatives")
    optional_example_keys = ("caption", "captions", "position")
    setting_keys = ("ties",)
    generation = GenerationRules(text_negatives=True)

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``ties``: which of tied candidates wins (``order``: the first in column order)."""
        return {"ties": fields.choice("ties", metrics.ORDERED_TIE_RULES, "fail")}

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> CaptionExample:
        """``image``, ``caption`` (or a list of true ``captions``), ``negatives`` and the
        optional ``position`` of the true caption(s) among them."""
        if fields.has("caption") == fields.has("captions"):
            fields.fail(f"{fields.where} needs exactly one of 'caption' or 'captions'")
        image = image_at(context, fields, "image")
        if fields.has("captions"):
            captions = fields.strings("captions")
        else:
            captions = (fields.text("caption"),)
        negatives = fields.strings("negatives")
        position = position_of(fields, len(negatives)) if fields.has("position") else 0
        return CaptionExample(example_id, image, captions, negatives, tags, line, position)

    def grid(self, example: CaptionExample) -> Grid:
        """One image x (true captions..., negatives...)."""
        return (example.image,), (*example.captions, *example.negatives)

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int, int]:
        """One image, every caption, and how many of them are true."""
        true = len(raw["captions"]) if "captions" in raw else 1
        return 1, true + len(raw["negatives"]), true

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> float:
        """Mean of 1/C(n, t) over examples: t true captions of n texts all ranked first."""
        return metrics.top_set_chance([s[1] for s in shapes], [s[2] for s in shapes])

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[CaptionExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """The lowest true caption (the first columns) must beat every negative."""
        counts = [len(e.captions) for e in examples]
        true = [np.min(g[0, :t]) for g, t in zip(grids, counts, strict=True)]
        others = [g[0, t:] for g, t in zip(grids, counts, strict=True)]
        rule = mapping_of(settings, "ties", "fail")
        if rule == "order":
            positions = [e.position for e in examples]
            outcome = choose_by_rules(true, others, [rule] * len(examples), positions)
        else:
            outcome = choose_one(true, others, rule)
        shapes = [(1, g.shape[1], t) for g, t in zip(grids, counts, strict=True)]
        chance = self.chance(settings, shapes)
        return Judgement(outcome.correct, outcome.ties, {}, chance)

    def describe_failure(self, example: CaptionExample, grid: np.ndarray) -> str:
        """The image, then every caption with its score."""
        _, texts = self.grid(example)
        true = len(example.captions)
        which = "first is true" if true == 1 else f"first {true} are true"
        return f"{example.image.describe()}: {scored_texts(texts, grid[0])} ({which})"

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The first text is true for the image (of several true captions the report marks the
        first; the failure's detail line says how many are true)."""
        if not n_texts:
            return set(), set(), set()
        return {0}, set(), {(i, 0) for i in range(n_images)}

    def rows(self, example: CaptionExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The true caption(s) with the image, then the negatives."""
        return [
            ("caption", list(example.captions), [example.image]),
            ("negatives", list(example.negatives), []),
        ]

    def text_choices(self, example: CaptionExample) -> list[tuple[str, tuple[str, ...]]]:
        """Each true caption against the negatives."""
        return [(caption, example.negatives) for caption in example.captions]

    def cluster_key(self, example: CaptionExample) -> str:
        """The image the captions are about."""
        return image_cluster(example.image)

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

    def parse_plain_examples(
        self, context: ParseContext, test_id: str, raws: Sequence[Any], lines: Sequence[int]
    ) -> tuple[CaptionExample, ...] | None:
        """Plain caption examples, built fast (``caption_plain``)."""
        return plain_caption_examples(context, test_id, raws, lines)


CAPTION = CaptionTask()
