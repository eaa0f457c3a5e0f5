"""``invariance``: the model's choice among captions must survive meaning-keeping changes.

CheckList's INV test for vision and language: an example holds an image, its candidate
captions (``caption`` first, then ``negatives``) and ``perturbations`` of the image (JPEG,
resize, small crop, small rotation, brightness, noise, a flip where the test says it keeps
the meaning) or of every caption (seeded typos, given paraphrases). It passes when the
strict argmax over the captions (a tie is no choice) is the same for the original and every
perturbed version; the threshold judges that consistency. ``consistent_and_right`` adds how
often the consistent choice was the true caption. There is no chance level: a model blind
to the image is perfectly consistent.

::

    perturbations: [jpeg, {resize: 0.5}, {noise: 0.05, seed: 1}, {typos: 1},
                    {paraphrase: [a circle that is red, a circle that is blue]}]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_vlcheck.images.perturb import KINDS, derive_seed, make_perturbation
from pytest_vlcheck.images.refs import ImageRef
from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.parsing.errors import ChecklistError
from pytest_vlcheck.parsing.example_fields import ParseContext, image_at
from pytest_vlcheck.parsing.fields import Fields, type_name
from pytest_vlcheck.tasks.base import BaseTask
from pytest_vlcheck.tasks.protocol import CandidateSet, GenerationRules, Grid, Judgement, ScoreScale
from pytest_vlcheck.texts.perturb import MAX_TYPOS, TEXT_KINDS, add_typos

if TYPE_CHECKING:
    from pytest_vlcheck.tasks.protocol import TrueMarks

_SIDE_WORDS = re.compile(r"\b(left|right)\b", re.IGNORECASE)


@dataclass(frozen=True)
class InvarianceExample:
    """An image, its candidate captions (the first is true) and their perturbed versions.

    ``perturbed_images`` are the image under each image perturbation (the ref carries it);
    ``perturbed_texts`` are (label, every caption perturbed) per text perturbation.
    """

    id: str
    image: ImageRef
    captions: tuple[str, ...]
    perturbed_images: tuple[ImageRef, ...]
    perturbed_texts: tuple[tuple[str, tuple[str, ...]], ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    line: int = 0


def strict_choice(scores: np.ndarray) -> int | None:
    """The index of the single best score; None for a tie at the top or a NaN."""
    row = np.asarray(scores, dtype=np.float32)
    if row.size == 0 or bool(np.isnan(row).any()):
        return None
    best = np.flatnonzero(row == row.max())
    return int(best[0]) if len(best) == 1 else None


def consistency(rows: Sequence[np.ndarray]) -> tuple[bool, bool]:
    """(passed, lost by a tie) for the original's scores (first) and each perturbed version's.

    Passed: every version makes the same strict choice. Lost by a tie: it failed, no score is
    NaN, and one caption is among the best of every version (it would pass if ties won).
    """
    choices = [strict_choice(r) for r in rows]
    if choices[0] is not None and all(c == choices[0] for c in choices):
        return True, False
    arrays = [np.asarray(r, dtype=np.float32) for r in rows]
    if any(bool(np.isnan(a).any()) for a in arrays):
        return False, False
    shared = set.intersection(*(set(np.flatnonzero(a == a.max()).tolist()) for a in arrays))
    return False, bool(shared)


def _kind_and_amount(raw: Any) -> tuple[str, Any, int]:
    """(kind, amount or None, seed) of one ``perturbations`` item: ``kind`` or
    ``{kind: amount, seed: N}``; ValueError says what is expected."""
    if isinstance(raw, str):
        return raw, None, 0
    expected = "a name such as jpeg, or a mapping such as {noise: 0.05, seed: 1}"
    if not isinstance(raw, Mapping):
        raise ValueError(f"is {type_name(raw)}; expected {expected}")
    kinds = [k for k in raw if k != "seed"]
    if len(kinds) != 1:
        raise ValueError(f"names {len(kinds)} perturbations; expected one ({expected})")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"'seed' must be an integer, got {type_name(seed)}")
    return str(kinds[0]), raw[kinds[0]], seed


EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "image": {"$ref": "#/$defs/image"},
        "caption": {"type": "string", "description": "the true caption"},
        "negatives": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "the other candidate captions",
        },
        "perturbations": {
            "type": "array",
            "items": {"$ref": "#/$defs/perturbation"},
            "minItems": 1,
            "description": "the choice among the captions must survive each of them",
        },
        "id": {"$ref": "#/$defs/example_id"},
        "tags": {"$ref": "#/$defs/tags"},
    },
    "required": ["image", "caption", "negatives", "perturbations"],
    "additionalProperties": False,
}
"""The JSON Schema of one example of this kind (``vlcheck schema`` gathers the kinds')."""


class InvarianceTask(BaseTask):
    """The same strict choice among captions before and after every perturbation."""

    name = "invariance"
    example_schema = EXAMPLE_SCHEMA
    example_keys = ("image", "caption", "negatives", "perturbations")
    generation = GenerationRules(changes=True)

    def parse_example(
        self,
        context: ParseContext,
        fields: Fields,
        example_id: str,
        tags: Mapping[str, str],
        line: int,
    ) -> InvarianceExample:
        """``image``, ``caption``, ``negatives`` and a non-empty list of ``perturbations``."""
        image = image_at(context, fields, "image")
        captions = (fields.text("caption"), *fields.strings("negatives"))
        images: list[ImageRef] = []
        texts: list[tuple[str, tuple[str, ...]]] = []
        for index, raw in enumerate(fields.items("perturbations")):
            where = fields.item_line("perturbations", index)
            try:
                kind, amount, seed = _kind_and_amount(raw)
                seed = derive_seed(example_id, index, seed)
                if kind in TEXT_KINDS:
                    texts.append(_perturbed_texts(kind, amount, seed, captions))
                else:
                    _check_flip(kind, captions)
                    images.append(replace(image, perturb=make_perturbation(kind, amount, seed)))
            except ValueError as exc:
                raise ChecklistError(
                    context.path, where, f"'perturbations' item {index + 1} {exc}"
                ) from None
        return InvarianceExample(
            example_id, image, captions, tuple(images), tuple(texts), tags, line
        )

    def grid(self, example: InvarianceExample) -> Grid:
        """(image, perturbed images...) x (captions, each text perturbation's captions...)."""
        texts = [*example.captions]
        for _, perturbed in example.perturbed_texts:
            texts.extend(perturbed)
        return (example.image, *example.perturbed_images), tuple(texts)

    def raw_grid_shape(self, raw: Mapping[str, Any]) -> tuple[int, int]:
        """Images: 1 + image perturbations; texts: the captions once per version."""
        kinds = [_kind_and_amount(p)[0] for p in raw["perturbations"]]
        n_text = sum(k in TEXT_KINDS for k in kinds)
        return 1 + len(kinds) - n_text, (1 + len(raw["negatives"])) * (1 + n_text)

    def chance(
        self, settings: Mapping[str, Any], shapes: Sequence[tuple[int, ...]]
    ) -> float | None:
        """None: a model that ignores the image is perfectly consistent."""
        return None

    def _versions(self, example: InvarianceExample, grid: np.ndarray) -> list[np.ndarray]:
        """The caption scores of the original, each perturbed image, each text perturbation."""
        k = len(example.captions)
        rows = [grid[i, :k] for i in range(1 + len(example.perturbed_images))]
        rows += [grid[0, k * t : k * (t + 1)] for t in range(1, 1 + len(example.perturbed_texts))]
        return rows

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[InvarianceExample],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """Consistency per example; ``consistent_and_right`` and ``original_accuracy``."""
        outcomes = [consistency(self._versions(e, g)) for e, g in zip(examples, grids, strict=True)]
        correct = np.array([ok for ok, _ in outcomes], dtype=bool)
        ties = np.array([tie for _, tie in outcomes], dtype=bool)
        right = np.array(
            [
                strict_choice(g[0, : len(e.captions)]) == 0
                for e, g in zip(examples, grids, strict=True)
            ],
            dtype=bool,
        )
        n = max(len(examples), 1)
        extra = {
            "consistent_and_right": float((correct & right).sum() / n),
            "original_accuracy": float(right.sum() / n),
        }
        return Judgement(correct, ties, extra, None)

    def describe_failure(self, example: InvarianceExample, grid: np.ndarray) -> str:
        """Which caption each version picked (or that it tied)."""
        labels = [
            "original",
            *(f"{r.perturb.canonical()}" for r in example.perturbed_images if r.perturb),
            *(label for label, _ in example.perturbed_texts),
        ]
        picks = []
        for label, row in zip(labels, self._versions(example, grid), strict=True):
            choice = strict_choice(row)
            picked = "a tie" if choice is None else repr(example.captions[choice])
            picks.append(f"{label} -> {picked}")
        return f"{example.image.describe()}: " + "; ".join(picks) + " (first caption is true)"

    def true_marks(self, n_images: int, n_texts: int) -> TrueMarks:
        """The first caption is true for the original image."""
        if not n_texts:
            return set(), set(), set()
        return {0}, set(), {(i, 0) for i in range(n_images)}

    def rows(self, example: InvarianceExample) -> list[tuple[str, list[str], list[ImageRef]]]:
        """The captions with the image, then each perturbed version."""
        out = [("captions", list(example.captions), [example.image])]
        out += [
            (f"{r.perturb.canonical()}", [], [r]) for r in example.perturbed_images if r.perturb
        ]
        out += [(label, list(texts), []) for label, texts in example.perturbed_texts]
        return out

    def generate(self, candidates: CandidateSet) -> list[dict[str, Any]]:
        """The caption example of the truth, with the generate block's perturbations
        (paraphrase lists put in the example's caption order)."""
        order = [candidates.truth, *candidates.others]
        changes = [
            {**c, "paraphrase": [c["paraphrase"][i] for i in order]} if "paraphrase" in c else c
            for c in candidates.changes
        ]
        return [
            {
                "id": candidates.example_id,
                "image": {"scene": candidates.scenes[candidates.truth]},
                "caption": candidates.captions[candidates.truth],
                "negatives": [candidates.captions[i] for i in candidates.others],
                "perturbations": [dict(c) for c in changes],
                "tags": dict(candidates.tags),
            }
        ]

    def verdict_notes(self, score_kind: str) -> list[str]:
        """Why the row shows no chance level."""
        return [
            "consistency has no chance level: a model blind to the image never changes its choice"
        ]


def _perturbed_texts(
    kind: str, amount: Any, seed: int, captions: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """(label, every caption perturbed) for ``typos`` (a count) or ``paraphrase`` (a list)."""
    if kind == "paraphrase":
        if (
            not isinstance(amount, list)
            or len(amount) != len(captions)
            or not all(isinstance(t, str) and t.strip() for t in amount)
        ):
            raise ValueError(
                f"'paraphrase' must list {len(captions)} non-empty texts, one per caption "
                f"(the caption, then each negative)"
            )
        return "paraphrase", tuple(amount)
    count = 1 if amount is None else amount
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TYPOS:
        raise ValueError(f"'typos' is {count!r}; expected a whole number from 1 to {MAX_TYPOS}")
    typed = tuple(add_typos(c, count, derive_seed(seed, j)) for j, c in enumerate(captions))
    if typed == captions:
        raise ValueError(
            "'typos' cannot change these captions (no two different neighbouring letters)"
        )
    return f"typos:{count}", typed


def _check_flip(kind: str, captions: Sequence[str]) -> None:
    """A mirror image swaps left and right: refuse a flip where a caption names a side."""
    if kind not in KINDS:
        known = ", ".join([*KINDS, *TEXT_KINDS])
        raise ValueError(f"names an unknown perturbation '{kind}'; expected one of {known}")
    sided = [c for c in captions if _SIDE_WORDS.search(c)]
    if kind == "hflip" and sided:
        raise ValueError(
            f"'hflip' changes the meaning of {sided[0]!r} (a mirror image swaps left and "
            f"right); flip only where the captions name no side"
        )


INVARIANCE = InvarianceTask()
