"""``group``: two images and two captions, caption i true for image i (Winoground layout).

A test picks its pass criterion: ``text`` (each image prefers its own caption: the
counter-balanced pair metric of the predicate-noun paper, chance 1/4), ``image`` (each caption
prefers its own image, 1/4) or ``group`` (both, 1/6; the default). Every group test also
reports the three scores and the per-triplet caption-choice accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pytest_vlcheck import metrics
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.example_fields import ParseContext, image_list
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.base import BaseTask, image_cluster
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks

GroupCriterion = Literal["text", "image", "group"]
CRITERIA: tuple[GroupCriterion, ...] = ("text", "image", "group")
DEFAULT_CRITERION: GroupCriterion = "group"


@dataclass(frozen=True)
class GroupExample:
    """Two images and two captions; caption i is true for image i (Winoground layout)."""

    id: str
    images: tuple[ImageRef, ImageRef]
    captions: tuple[str, str]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


def criterion_of(settings: Mapping[str, Any]) -> GroupCriterion:
    """The test's pass criterion."""
    criterion: GroupCriterion = settings.get("criterion", DEFAULT_CRITERION)  # checked on load
    return criterion


EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "images": {
            "type": "array",
            "items": {"$ref": "#/$defs/image"},
            "minItems": 2,
            "maxItems": 2,
        },
        "captions": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 2,
            "maxItems": 2,
            "description": "caption i is true for image i",
        },
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["images", "captions"],
    "additionalProperties": False,
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class GroupTask(BaseTask):
    """Winoground's text, image and group scores over 2 x 2 grids."""

    name = "group"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("images", "captions")
    setting_keys = ("criterion",)
    generation = GenerationRules(mirrors=False, scene_negatives=1)

    def parse_settings(self, fields: Fields) -> dict[str, Any]:
        """``criterion``: text, image or group (default)."""
        if not fields.has("criterion"):
            return {"criterion": DEFAULT_CRITERION}
        return {"criterion": fields.choice("criterion", CRITERIA)}

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> GroupExample:
        """Exactly two ``images`` and two ``captions``."""
        images = image_list(context, fields, "images", exact=2)
        captions = fields.strings("captions", exact=2)
        return GroupExample(example_id, images, captions, tags, line)  # type: ignore[arg-type]

    def grid(self, example: GroupExample) -> Grid:
        """(image 0, image 1) x (caption 0, caption 1)."""
        return example.images, example.captions

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """Always 2 x 2."""
        return 2, 2

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> float:
        """1/4 for the text or image score, 1/6 for the group score (Winoground)."""
        return metrics.GROUP_CHANCE[criterion_of(settings)]

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[GroupExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """The criterion's outcome; ties are examples that pass once ties count as wins."""
        stacked = np.stack(grids)
        criterion = criterion_of(settings)
        scores = metrics.group_outcomes(stacked)
        lenient = metrics.group_outcomes(stacked, strict=False)
        extra = {f"{name}_score": float(values.mean()) for name, values in scores.items()}
        extra["caption_choice_accuracy"] = float(metrics.group_caption_choices(stacked).mean())
        correct = scores[criterion]
        return Judgement(correct, ~correct & lenient[criterion], extra, self.chance(settings, []))

    def describe_failure(self, example: GroupExample, grid: np.ndarray) -> str:
        """Each image with both captions' scores."""
        refs, texts = self.grid(example)
        return "; ".join(
            f"{refs[i].describe()}: {texts[0]!r} {grid[i, 0]:.4f}, {texts[1]!r} {grid[i, 1]:.4f}"
            for i in range(2)
        )

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """Image i with caption i."""
        return set(), set(), {(i, i) for i in range(min(n_images, n_texts))}

    def rows(self, example: GroupExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """Each caption with its image."""
        return [
            (f"caption {i} / image {i}", [example.captions[i]], [example.images[i]])
            for i in range(2)
        ]

    def text_choices(self, example: GroupExample) -> list[tuple[str, tuple[str, ...]]]:
        """Each image's triplet: its caption against the other caption."""
        first, second = example.captions
        return [(first, (second,)), (second, (first,))]

    def cluster_key(self, example: GroupExample) -> str:
        """The two images, in either order."""
        return " | ".join(sorted(image_cluster(ref) for ref in example.images))

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """The base scene and caption with its one scene negative."""
        return [
            {
                "id": candidates.example_id,
                "images": [{"scene": candidates.scenes[0]}, {"scene": candidates.scenes[1]}],
                "captions": [candidates.captions[0], candidates.captions[1]],
                "tags": dict(candidates.tags),
            }
        ]


GROUP = GroupTask()
