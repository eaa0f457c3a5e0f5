"""``directional``: a known change must move the score a known way, strictly.

CheckList's DIR test for vision and language: an example holds an image, a text, and either
a changed text (negation: "a photo of a dog" -> "a photo of no dog") or a changed image (the
scene with the named object left out), with ``expect: lower`` or ``higher``. It passes when
s(changed) < s(original) (``lower``) or > (``higher``); an equal score (a tie) or a NaN fails.
``mean_change`` reports the mean of s(changed) - s(original). Chance 1/2: a scorer blind to
the change moves the score either way.

::

    - image: {scene: {...}}
      text: a photo of a circle
      changed_text: a photo of no circle      # or changed_image: {scene: {...}}
      expect: lower
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.images.scenes import occluded
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at
from pytest_vlcheck.parsing.fields import Fields
from pytest_vlcheck.tasks.base import BaseTask
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks

DIRECTIONS = ("lower", "higher")
CHANCE = 0.5


@dataclass(frozen=True)
class DirectionalExample:
    """An image and a text, with either the text or the image changed, and the direction
    the score must move (``lower`` / ``higher``)."""

    id: str
    image: ImageRef
    text: str
    expect: str
    changed_text: str | None = None
    changed_image: ImageRef | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


def moved(original: np.ndarray, changed: np.ndarray, expect: Sequence[str]) -> np.ndarray:
    """Per example: the changed score is strictly below (``lower``) or above (``higher``)
    the original; equal scores and NaNs fail."""
    original = np.asarray(original, dtype=np.float32)
    changed = np.asarray(changed, dtype=np.float32)
    lower = np.array([e == "lower" for e in expect], dtype=bool)
    return np.where(lower, changed < original, changed > original)


EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "image": {"$ref": "#/$defs/image"},
        "text": {"type": "string"},
        "changed_text": {
            "type": "string",
            "description": "the changed text (or give changed_image)",
        },
        "changed_image": {
            "$ref": "#/$defs/image",
            "description": "the changed image (or give changed_text)",
        },
        "expect": {
            "enum": ["lower", "higher"],
            "description": "how the changed pair's score must move, strictly",
        },
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["image", "text", "expect"],
    "oneOf": [{"required": ["changed_text"]}, {"required": ["changed_image"]}],
    "additionalProperties": False,
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class DirectionalTask(BaseTask):
    """One pair of scores per example; the change must move it the expected way."""

    name = "directional"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("image", "text", "expect")
    optional_example_keys = ("changed_text", "changed_image")
    generation = GenerationRules(changes=True)

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> DirectionalExample:
        """``image``, ``text``, ``expect`` and exactly one of ``changed_text`` /
        ``changed_image``."""
        image = image_at(context, fields, "image")
        text = fields.text("text")
        expect = fields.choice("expect", DIRECTIONS)
        if fields.has("changed_text") == fields.has("changed_image"):
            fields.fail(f"{fields.where} needs exactly one of 'changed_text' or 'changed_image'")
        if fields.has("changed_text"):
            changed = fields.text("changed_text")
            if changed == text:
                fields.fail(
                    "'changed_text' is the same as 'text'; expected a change", "changed_text"
                )
            return DirectionalExample(example_id, image, text, expect, changed, None, tags, line)
        changed_image = image_at(context, fields, "changed_image")
        if changed_image.key == image.key:
            fields.fail(
                "'changed_image' is the same as 'image'; expected a change", "changed_image"
            )
        return DirectionalExample(example_id, image, text, expect, None, changed_image, tags, line)

    def grid(self, example: DirectionalExample) -> Grid:
        """1 x (text, changed text), or (image, changed image) x 1."""
        if example.changed_image is not None:
            return (example.image, example.changed_image), (example.text,)
        return (example.image,), (example.text, str(example.changed_text))

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """Two images or two texts."""
        return (2, 1) if "changed_image" in raw else (1, 2)

    def chance(self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]) -> float:
        """A coin flip: a blind scorer moves either way."""
        return CHANCE

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[DirectionalExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """Strict moves; an unchanged score is a tie; ``mean_change`` = mean(changed - orig)."""
        original = np.array([g[0, 0] for g in grids], dtype=np.float32)
        changed = np.array([g.reshape(-1)[1] for g in grids], dtype=np.float32)
        correct = moved(original, changed, [e.expect for e in examples])
        ties = ~correct & (changed == original)
        delta = changed - original
        finite = delta[np.isfinite(delta)]
        extra = {"mean_change": float(finite.mean())} if finite.size else {}
        return Judgement(correct, ties, extra, CHANCE)

    def describe_failure(self, example: DirectionalExample, grid: np.ndarray) -> str:
        """Both scores and the direction expected."""
        before, after = float(grid.reshape(-1)[0]), float(grid.reshape(-1)[1])
        if example.changed_image is not None:
            what = (
                f"{example.text!r} on {example.image.describe()} {before:.4f} -> "
                f"{example.changed_image.describe()} {after:.4f}"
            )
        else:
            what = (
                f"{example.image.describe()}: {example.text!r} {before:.4f} -> "
                f"{example.changed_text!r} {after:.4f}"
            )
        return f"{what}; expected {example.expect}"

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The original pair is the reference cell."""
        if not n_images or not n_texts:
            return set(), set(), set()
        return set(), set(), {(0, 0)}

    def rows(self, example: DirectionalExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The original pair, then the change and its expected direction."""
        Row = tuple[str, list[str], list[ImageRef]]
        change: Row = (
            ("changed image", [], [example.changed_image])
            if example.changed_image is not None
            else ("changed text", [str(example.changed_text)], [])
        )
        return [
            ("original", [example.text], [example.image]),
            change,
            (f"expect {example.expect}", [], []),
        ]

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """One example per ``perturb:`` item of the truth: a changed text (``text``) or the
        scene with object a left out (``occlude``)."""
        truth = candidates.truth
        scene = candidates.scenes[truth]
        out = []
        for j, change in enumerate(candidates.changes):
            example: dict[str, Any] = {
                "id": candidates.example_id
                if len(candidates.changes) == 1
                else f"{candidates.example_id}.{j}",
                "image": {"scene": scene},
                "text": candidates.captions[truth],
                "expect": change.get("expect", "lower"),
                "tags": dict(candidates.tags, change="occlude" if "occlude" in change else "text"),
            }
            if "occlude" in change:
                example["changed_image"] = {"scene": occluded(scene, change["occlude"][truth])}
            elif "text" in change:
                example["changed_text"] = change["text"][truth]
            else:
                raise ValueError(
                    f"perturb: directional tests take {{text: TEMPLATE, expect: lower}} or "
                    f"{{occlude: a, expect: lower}} items, got {dict(change)!r}"
                )
            out.append(example)
        return out


DIRECTIONAL = DirectionalTask()
